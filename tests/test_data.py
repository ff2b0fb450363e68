import numpy as np
import pytest

from analysis.tasks.data import STDLIB_VAL_FILES, CorpusError, MarkovSource, file_corpus, stdlib_corpus


def test_stdlib_corpus_is_deterministic_and_split_by_file():
    a, b = stdlib_corpus(), stdlib_corpus()
    assert a.sha256 == b.sha256 and len(a.sha256) == 64
    assert a.train.size > 2_000_000 and a.val.size > 100_000
    assert a.train.dtype == np.uint8
    assert not set(a.files[: len(a.files) - len(STDLIB_VAL_FILES)]) & set(STDLIB_VAL_FILES)


def test_stdlib_corpus_needs_the_files(tmp_path):
    with pytest.raises(CorpusError, match="fewer than half"):
        stdlib_corpus(tmp_path)


def test_file_corpus_splits_and_rejects_bad_files(tmp_path):
    good = tmp_path / "good.txt"
    good.write_text("héllo wörld " * 100)
    c = file_corpus(good)
    assert c.train.size + c.val.size == len(good.read_bytes())
    assert c.val.size == pytest.approx(0.1 * len(good.read_bytes()), abs=1)
    (tmp_path / "empty.txt").write_bytes(b"")
    (tmp_path / "nul.bin").write_bytes(b"abc\x00def")
    (tmp_path / "latin.txt").write_bytes("caf\xe9".encode("latin-1"))
    cases = {
        tmp_path / "missing.txt": "does not exist",
        tmp_path: "is not a regular file",
        tmp_path / "empty.txt": "is empty",
        tmp_path / "nul.bin": "not text",
        tmp_path / "latin.txt": "not UTF-8 text",
    }
    for path, message in cases.items():
        with pytest.raises(CorpusError, match=message):
            file_corpus(path)
    with pytest.raises(ValueError, match="val_fraction"):
        file_corpus(good, val_fraction=1.5)


def test_markov_stationary_distribution_and_entropy_rate():
    src = MarkovSource(order=2, alphabet=5, concentration=0.7, seed=4)
    pi = src.stationary
    assert pi.sum() == pytest.approx(1.0, abs=1e-12)
    nxt = src._next_context()
    moved = np.bincount(nxt.ravel(), weights=(pi[:, None] * src.transition).ravel(), minlength=src.contexts)
    np.testing.assert_allclose(moved, pi, atol=1e-12)
    # The empirical loss of the true model on a long sample estimates the entropy rate.
    nll = src.nll(src.sample(200_000, seed=9))
    se = nll.std(ddof=1) / np.sqrt(nll.size)
    assert abs(nll.mean() - src.entropy_rate) < 4 * se + 0.01  # 4 SE plus burn-in/correlation slack


def test_markov_error_shrinks_with_sample_size():
    src = MarkovSource(order=1, alphabet=6, concentration=0.5, seed=2)
    errors = [abs(src.nll(src.sample(n, seed=1)).mean() - src.entropy_rate) for n in (1_000, 100_000)]
    assert errors[1] < errors[0]


def test_markov_corpus_and_validation():
    src = MarkovSource(order=1, alphabet=4, seed=0)
    c = src.corpus(1000, 500)
    assert set(np.unique(c.train)) <= set(range(ord("a"), ord("a") + 4))
    assert c.entropy_rate == src.entropy_rate and "val_true_loss" in c.extra
    for kw, message in [({"order": 7}, "order"), ({"alphabet": 1}, "alphabet"), ({"concentration": 0.0}, "concentration"),
                        ({"order": 6, "alphabet": 26}, "contexts")]:
        with pytest.raises(ValueError, match=message):
            MarkovSource(**kw)
    with pytest.raises(ValueError, match="length"):
        src.sample(0, seed=1)
    with pytest.raises(ValueError, match="tokens must"):
        src.nll(np.array([0, 1], dtype=np.uint8))


def test_the_pinned_sources_corpus_has_its_recorded_hash_and_is_checked(tmp_path):
    import hashlib

    from analysis.tasks.data import (
        PINNED_CORPUS_SHA256,
        PINNED_SOURCES,
        ensure_pinned_corpus,
        pinned_corpus_bytes,
        pinned_source_files,
    )

    data = pinned_corpus_bytes()  # the pinned wheels are pure Python: the same bytes wherever they are installed
    assert hashlib.sha256(data).hexdigest() == PINNED_CORPUS_SHA256 and len(data) > 40_000_000
    labels = [label for label, _ in pinned_source_files()]
    assert {label.split("/")[0] for label in labels} == {f"{n}-{v}" for n, v in PINNED_SOURCES}
    assert labels == sorted(labels, key=lambda x: hashlib.sha256(x.encode()).hexdigest())
    path = ensure_pinned_corpus(tmp_path / "c" / "corpus.txt")  # written when missing
    assert path.read_bytes() == data and ensure_pinned_corpus(path) == path  # read back when present
    corpus = file_corpus(path)
    assert corpus.train.size + corpus.val.size == len(data)
    path.write_bytes(data[:-1] + b"!")
    with pytest.raises(CorpusError, match="remove it to rebuild"):
        ensure_pinned_corpus(path)
    with pytest.raises(CorpusError, match="needs sympy==0.1; this environment has"):
        pinned_source_files((("sympy", "0.1"),))
    with pytest.raises(CorpusError, match="not installed"):
        pinned_source_files((("no-such-distribution-here", "1.0"),))


def test_no_gpu_run_reads_its_text_more_than_a_few_times():
    from analysis.tasks.data import PINNED_CORPUS_PATH
    from analysis.core.registry import EXPERIMENTS, config_for
    from analysis.compute.plan import text_passes

    train_tokens = int(0.9 * 45_801_987)  # file_corpus holds out the last 10%
    users = [n for n in sorted(EXPERIMENTS) if getattr(config_for(EXPERIMENTS[n], "gpu"), "corpus_file", None)]
    assert len(users) >= 8
    for name in users:
        assert config_for(EXPERIMENTS[name], "gpu").corpus_file == PINNED_CORPUS_PATH
        assert 0 < text_passes(name, "gpu", train_tokens) <= 2, name
    with pytest.raises(ValueError, match="train_tokens must be"):
        text_passes("deep-gau", "gpu", 0)
