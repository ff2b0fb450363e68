"""Multi-query associative recall: a synthetic task whose difficulty is the number of keys a query chooses among.

Arora et al. 2023 (Zoology) show that the gap between attention and its cheaper substitutes is explained almost
entirely by recall, and that this task reproduces it at small scale. Here the number of pairs, the vocabulary and
the length are set independently, every sequence is generated from a seed, and a model is scored per query.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
import torch

# the target of the positions that are not scored
from analysis.tasks.data import IGNORE_INDEX as IGNORE


class _ScoredSequences:
    """What every synthetic task shares: a batch source for the trainer and the length of a query's row."""

    def batch(self, size: int, seed: int) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
        """``size`` sequences (inputs, targets), each (size, length); targets are IGNORE except at the queries."""
        if not isinstance(size, int) or size < 1:
            raise ValueError(f"size must be a positive integer; got {size!r}")
        return self._draw(size, np.random.default_rng(seed))

    def _draw(self, size: int, rng: np.random.Generator) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
        raise NotImplementedError

    def source(self) -> Callable[[int, torch.Generator], tuple[torch.Tensor, torch.Tensor]]:
        """A batch source for :func:`analysis.training.train.train_lm`: each batch's seed is drawn from the trainer's generator."""

        def draw(size: int, generator: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
            seed = int(torch.randint(0, 2**62, (1,), generator=generator))
            inputs, targets = self.batch(size, seed)
            return torch.from_numpy(inputs), torch.from_numpy(targets)

        return draw

    def mean_row_length(self, size: int = 256, seed: int = 0) -> float:
        """Mean number of positions a query's causal attention row holds (query index + 1), over ``size`` sequences."""
        _, targets = self.batch(size, seed)
        return float((np.nonzero(targets != IGNORE)[1] + 1).mean())


@dataclass(frozen=True)
class RecallTask(_ScoredSequences):
    """Multi-query associative recall (Arora et al. 2023, Zoology): ``pairs`` key-value pairs, then the keys again,
    each at a random place in the rest of the sequence; the target at a query is the value stored with its key.

    Tokens: 0 is filler; keys are 1 .. K and values K+1 .. vocab-1, with K = (vocab - 1) // 2. The keys of one
    sequence are distinct, and so are its values, so a query chooses among exactly ``pairs`` values: a model that
    has learnt which tokens are values but cannot recall scores 1/pairs, the chance level.
    """

    pairs: int
    length: int
    vocab: int = 256
    queries: int | None = None  # queried keys per sequence; default every key once

    def __post_init__(self) -> None:
        for name in ("pairs", "length", "vocab"):
            value = getattr(self, name)
            if not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be a positive integer; got {value!r}")
        if self.vocab < 5:
            raise ValueError(f"vocab must be at least 5 (filler, 2 keys, 2 values); got {self.vocab}")
        if self.pairs > self.key_count or self.pairs > self.vocab - 1 - self.key_count:
            raise ValueError(f"pairs ({self.pairs}) must not exceed the {self.key_count} keys and "
                             f"{self.vocab - 1 - self.key_count} values of a vocabulary of {self.vocab}")
        q = self.num_queries
        if not isinstance(q, int) or not 1 <= q <= self.pairs:
            raise ValueError(f"queries must be an integer in [1, pairs = {self.pairs}]; got {self.queries!r}")
        if self.length < 2 * self.pairs + q:
            raise ValueError(f"length must hold the {2 * self.pairs} tokens of the pairs and {q} queries "
                             f"(at least {2 * self.pairs + q}); got {self.length}")

    @property
    def key_count(self) -> int:
        """K = (vocab - 1) // 2: tokens 1..K are keys."""
        return (self.vocab - 1) // 2

    @property
    def num_queries(self) -> int:
        """Queries per sequence."""
        return self.pairs if self.queries is None else self.queries

    @property
    def chance(self) -> float:
        """1 / pairs: the accuracy of a guess among the sequence's values."""
        return 1.0 / self.pairs

    def _draw(self, size: int, rng: np.random.Generator) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
        p, q, k = self.pairs, self.num_queries, self.key_count
        inputs = np.zeros((size, self.length), dtype=np.int64)
        targets = np.full((size, self.length), IGNORE, dtype=np.int64)
        region = self.length - 2 * p
        for i in range(size):
            keys = rng.choice(k, size=p, replace=False) + 1
            values = rng.choice(self.vocab - 1 - k, size=p, replace=False) + 1 + k
            inputs[i, 0 : 2 * p : 2], inputs[i, 1 : 2 * p : 2] = keys, values
            asked = rng.choice(p, size=q, replace=False)
            where = 2 * p + rng.choice(region, size=q, replace=False)
            inputs[i, where], targets[i, where] = keys[asked], values[asked]
        return inputs, targets


def recall_metrics(logits: torch.Tensor, targets: torch.Tensor) -> tuple[float, float]:
    """Per-query accuracy (argmax = target) and mean cross-entropy (nats) over the positions whose target is not
    IGNORE; logits (..., vocab), targets (...)."""
    if logits.shape[:-1] != targets.shape:
        raise ValueError(f"logits {tuple(logits.shape)} and targets {tuple(targets.shape)} must agree but for the "
                         "last axis")
    scored = targets != IGNORE
    if not bool(scored.any()):
        raise ValueError("no scored position (every target is IGNORE)")
    chosen, answers = logits.detach()[scored], targets[scored]
    accuracy = float((chosen.argmax(-1) == answers).double().mean())
    loss = float(torch.nn.functional.cross_entropy(chosen.double(), answers))
    return accuracy, loss


@dataclass(frozen=True)
class LookupTask(_ScoredSequences):
    """Single-token recall: ``pairs`` tokens each bind a distinct key to a value, then ``queries`` keys are asked;
    the target at a query is the value bound to its key. One attention layer solves it, and a query's row holds
    exactly the ``pairs`` bindings it chooses among (plus the queries before it), so the softmax's task is known.

    Tokens: binding (key i, value j) is 1 + i * values + j; query of key i is 1 + keys * values + i; 0 is unused.
    The target at a query is the binding token itself, so that answering is copying what attention selects; a model
    that reads the key off the query but cannot recall guesses among that key's ``values`` bindings: 1/values.
    """

    pairs: int
    keys: int = 64
    values: int = 16
    queries: int = 4

    def __post_init__(self) -> None:
        for name in ("pairs", "keys", "values", "queries"):
            value = getattr(self, name)
            if not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be a positive integer; got {value!r}")
        if self.pairs > self.keys:
            raise ValueError(f"pairs ({self.pairs}) must not exceed keys ({self.keys}): a sequence's keys are distinct")
        if self.values < 2:
            raise ValueError(f"values must be at least 2; got {self.values}")

    @property
    def length(self) -> int:
        """pairs + queries tokens."""
        return self.pairs + self.queries

    @property
    def vocab(self) -> int:
        """1 + keys * values bindings + keys queries."""
        return 1 + self.keys * self.values + self.keys

    @property
    def chance(self) -> float:
        """1 / values: the accuracy of a guess among the bindings of the queried key."""
        return 1.0 / self.values

    def _draw(self, size: int, rng: np.random.Generator) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
        p, kv = self.pairs, self.keys * self.values
        keys = np.argsort(rng.random((size, self.keys)), axis=1)[:, :p]  # distinct keys per sequence
        values = rng.integers(0, self.values, (size, p))
        asked = rng.integers(0, p, (size, self.queries))
        inputs = np.empty((size, self.length), dtype=np.int64)
        targets = np.full((size, self.length), IGNORE, dtype=np.int64)
        inputs[:, :p] = 1 + keys * self.values + values
        inputs[:, p:] = 1 + kv + np.take_along_axis(keys, asked, axis=1)
        targets[:, p:] = np.take_along_axis(inputs[:, :p], asked, axis=1)
        return inputs, targets

