import math

import numpy as np
import pytest
import torch

from analysis.tasks.recall import IGNORE, LookupTask, RecallTask, recall_metrics


def solve(inputs, pairs):
    """The exact answer of every query: the value stored right after its key in the pairs region."""
    out = np.full_like(inputs, IGNORE)
    for i, row in enumerate(inputs):
        table = dict(zip(row[0 : 2 * pairs : 2], row[1 : 2 * pairs : 2]))
        for t in range(2 * pairs, len(row)):
            if row[t] in table:
                out[i, t] = table[row[t]]
    return out


@pytest.mark.parametrize("pairs, length, vocab, queries", [(4, 16, 32, None), (16, 64, 256, 5), (1, 3, 5, None)])
def test_batches_are_seeded_well_formed_and_solvable(pairs, length, vocab, queries):
    task = RecallTask(pairs=pairs, length=length, vocab=vocab, queries=queries)
    x, y = task.batch(50, seed=3)
    assert x.shape == y.shape == (50, length) and x.dtype == y.dtype == np.int64
    x2, y2 = task.batch(50, seed=3)
    assert np.array_equal(x, x2) and np.array_equal(y, y2)
    assert not np.array_equal(x, task.batch(50, seed=4)[0])
    k = task.key_count
    keys, values = x[:, 0 : 2 * pairs : 2], x[:, 1 : 2 * pairs : 2]
    assert keys.min() >= 1 and keys.max() <= k and values.min() > k and values.max() < vocab
    assert all(len(set(r)) == pairs for r in keys) and all(len(set(r)) == pairs for r in values)
    assert np.all((y != IGNORE).sum(1) == task.num_queries)
    assert np.all(y[:, : 2 * pairs] == IGNORE)  # nothing is scored before every pair has been seen
    assert np.array_equal(solve(x, pairs), y)
    assert task.chance == 1 / pairs


def test_guessing_among_the_sequences_values_scores_chance():
    task = RecallTask(pairs=8, length=40, vocab=64)
    x, y = task.batch(2000, seed=0)
    rng = np.random.default_rng(1)
    scored = y != IGNORE
    guesses = np.array([rng.choice(row[1:16:2]) for row in x for _ in range(8)])
    accuracy = (guesses == y[scored]).mean()
    se = math.sqrt(task.chance * (1 - task.chance) / scored.sum())
    assert abs(accuracy - task.chance) < 4 * se


def test_recall_metrics():
    task = RecallTask(pairs=4, length=16, vocab=32)
    x, y = (torch.from_numpy(a) for a in task.batch(10, seed=0))
    perfect = torch.full((10, 16, 32), -30.0)
    scored = y != IGNORE
    perfect[scored, y[scored]] = 30.0
    accuracy, loss = recall_metrics(perfect, y)
    assert accuracy == 1.0 and loss < 1e-20
    accuracy, loss = recall_metrics(torch.zeros(10, 16, 32), y)
    assert loss == pytest.approx(math.log(32))
    with pytest.raises(ValueError, match="must agree"):
        recall_metrics(torch.zeros(10, 15, 32), y)
    with pytest.raises(ValueError, match="no scored position"):
        recall_metrics(torch.zeros(10, 16, 32), torch.full((10, 16), IGNORE))


@pytest.mark.parametrize("kw, message", [
    ({"pairs": 0, "length": 8}, "pairs must be a positive integer"),
    ({"pairs": 20, "length": 64, "vocab": 32}, "must not exceed the 15 keys"),
    ({"pairs": 4, "length": 10}, "length must hold"),
    ({"pairs": 4, "length": 16, "queries": 5}, "queries must be an integer in"),
    ({"pairs": 1, "length": 4, "vocab": 4}, "vocab must be at least 5"),
])
def test_bad_tasks(kw, message):
    with pytest.raises(ValueError, match=message):
        RecallTask(**kw)
    with pytest.raises(ValueError, match="size must be a positive integer"):
        RecallTask(pairs=2, length=8).batch(0, seed=0)


def lookup_answers(task, inputs):
    """The exact answer of every query of a LookupTask: the binding of its key among the bindings before it."""
    kv = task.keys * task.values
    out = np.full_like(inputs, IGNORE)
    for i, row in enumerate(inputs):
        table = {(t - 1) // task.values: t for t in row[: task.pairs]}
        for j in range(task.pairs, task.length):
            out[i, j] = table[row[j] - 1 - kv]
    return out


@pytest.mark.parametrize("pairs, keys, values, queries", [(4, 8, 3, 2), (64, 64, 16, 4), (1, 1, 2, 1)])
def test_lookup_batches_are_seeded_well_formed_and_solvable(pairs, keys, values, queries):
    task = LookupTask(pairs, keys=keys, values=values, queries=queries)
    x, y = task.batch(40, seed=5)
    assert x.shape == y.shape == (40, pairs + queries) and task.length == pairs + queries
    assert np.array_equal(x, task.batch(40, seed=5)[0]) and not np.array_equal(x, task.batch(40, seed=6)[0])
    assert x.min() >= 1 and x.max() < task.vocab and y[y != IGNORE].max() < task.vocab
    bound_keys = (x[:, :pairs] - 1) // values
    assert all(len(set(row)) == pairs for row in bound_keys)  # distinct keys: exactly `pairs` candidates
    assert np.array_equal(y, lookup_answers(task, x))
    assert (y[:, :pairs] == IGNORE).all() and (y[:, pairs:] != IGNORE).all()
    # a query's causal row holds the bindings and the queries up to it
    assert task.mean_row_length() == pytest.approx(pairs + (queries + 1) / 2)


@pytest.mark.parametrize("kwargs, message", [
    (dict(pairs=0), "pairs"), (dict(pairs=9, keys=8), "must not exceed keys"), (dict(pairs=2, values=1), "values"),
    (dict(pairs=2, queries=0), "queries"), (dict(pairs=2.0), "pairs"),
])
def test_lookup_rejects_bad_shapes(kwargs, message):
    with pytest.raises(ValueError, match=message):
        LookupTask(**kwargs)


def test_the_trainer_learns_lookup_from_a_batch_source_and_scores_only_the_queries():
    from analysis.models.lm import LanguageModel, ModelConfig
    from analysis.training.train import TrainConfig, train_lm

    task = LookupTask(8, keys=8, values=4, queries=4)
    x, y = (torch.from_numpy(a) for a in task.batch(256, seed=99))
    torch.manual_seed(0)
    model = LanguageModel(ModelConfig(vocab=task.vocab, d=32, layers=1, heads=1, block="transformer", residual="pre",
                                      ctx=task.length, attn="cosine", cosine_scale=8.0))
    before = recall_metrics(model(x), y)
    log = train_lm(model, task.source(), TrainConfig(steps=150, batch=32, lr=1e-2, warmup=10), task.length,
                   torch.device("cpu"), progress=False)
    accuracy, loss = recall_metrics(model.eval()(x), y)
    assert log.diverged_at is None and loss < before[1] - 1.0
    assert accuracy > 3 * task.chance  # recall, not a guess among the values
    # the training loss is the loss at the queries only (the other positions have no target to score)
    assert log.train_loss[-1] == pytest.approx(loss, rel=0.5)
    # the batches come from the trainer's generator: the same seed draws the same batches
    g1, g2 = torch.Generator().manual_seed(3), torch.Generator().manual_seed(3)
    assert torch.equal(task.source()(4, g1)[0], task.source()(4, g2)[0])
