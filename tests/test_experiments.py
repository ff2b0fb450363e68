import numpy as np
import pytest

from analysis.core.registry import config_for, get_experiment
from analysis.core.runner import run_and_record, run_experiment
from analysis.studies.entropy.experiments import entropy_bound, entropy_lm
from analysis.core.results import load_record


def test_entropy_bound_smoke_claims_hold():
    data = entropy_bound.run(entropy_bound.CONFIGS["smoke"])
    assert data["direct"]["max_classes"] == 150_000
    assert all(m["increases_on_notes_range"] == 0 for m in data["monotone"].values())
    assert all(m["increases_on_full_range"] > 0 for m in data["monotone"].values())
    for claim in entropy_bound.claims(data, "smoke"):
        assert claim.verdict == "holds", claim.key
    # every claim names its rival; the ln K for ln(K - 1) slip peaks ln(1 + 1/K) above ln K
    claims = {c.key: c for c in entropy_bound.claims(data, "smoke")}
    assert all(c.has_rival for c in claims.values())
    assert claims["entropy-peak"].alternative == pytest.approx(np.log1p(1 / min(int(k) for k in data["peaks"])))
    k, h = 150_000, np.log(2) + 0.5 * np.log(150_000 - 1)
    assert claims["closed-form-vs-direct"].alternative == pytest.approx(
        0.5 * np.log(k / (k - 1)) / (np.finfo(float).eps * (4 * h + 2)))


def test_notes_code_agrees_on_their_range_and_clip_onset():
    exact = float(entropy_bound.spread_prediction_entropy(0.8, 1000))
    assert entropy_bound.notes_entropy(0.8, 1000) == pytest.approx(exact, rel=1e-13)
    p = 1 - 1e-12  # beyond the clip onset for K = 1000 the notes' clip adds entropy
    assert entropy_bound.notes_entropy(p, 1000) > 2 * float(entropy_bound.spread_prediction_entropy(p, 1000))


def test_entropy_lm_smoke_run_and_record(tmp_path):
    record, path = run_and_record("entropy-lm", "smoke", directory=str(tmp_path), progress=False)
    loaded = load_record(path)
    real, markov = loaded.data["real"], loaded.data["markov"]
    assert [s["step"] for s in real["snapshots"]] == list(entropy_lm.CONFIGS["smoke"].snapshots)
    for snap in real["snapshots"]:
        assert snap["max_excess_over_bound"] <= 1e-9
        assert len(snap["loss"]) == len(snap["entropy"]) <= entropy_lm.CONFIGS["smoke"].max_points
    assert markov["true_loss"] == pytest.approx(markov["entropy_rate"], abs=6 * markov["true_loss_se"] + 0.05)
    assert markov["model_loss"] - markov["true_loss"] == pytest.approx(markov["excess_loss"], rel=1e-9)
    claims = entropy_lm.claims(loaded.data, "smoke")
    assert {c.key for c in claims} == {"lm-bound", "lm-calibration", "markov-floor", "lm-bound-gau", "lm-calibration-gau",
                                       "lm-bound-flash", "lm-calibration-flash"}
    assert all(c.verdict == "holds" for c in claims if c.key.startswith("lm-bound"))
    # calibration: the evaluation windows are the units, not tokens, and every token counts; the Markov floor says
    # its interval is too narrow, since the record keeps no per-sequence values
    windows = entropy_lm.CONFIGS["smoke"].eval_windows
    for c in claims:
        if c.key.startswith("lm-calibration"):
            assert f"over {windows} evaluation windows ({windows - 1} df)" in c.tolerance_basis
            assert len(real["snapshots"][-1]["window_loss_minus_entropy"]) == windows
            assert c.detectable is not None and c.detectable > 0 and c.predicted == 0.0
    floor = next(c for c in claims if c.key == "markov-floor")
    assert "too narrow" in floor.tolerance_basis and floor.measured == pytest.approx(markov["excess_loss"])
    # every claim names its rival: the per-token H <= L, and the uniform model's excess as the floor's scale
    assert all(c.has_rival for c in claims)
    bound = next(c for c in claims if c.key == "lm-bound")
    assert bound.alternative == pytest.approx(max(e - l for s in real["snapshots"]
                                                  for e, l in zip(s["entropy"], s["loss"])))
    assert floor.effect == pytest.approx(markov["uniform_loss"] - markov["true_loss"])
    # GAU and FLASH are trained like the Transformer and snapshot at the same steps
    assert set(loaded.data["others"]) == {"GAU", "FLASH"}
    for name, block in (("GAU", "gau"), ("FLASH", "flash")):
        other = loaded.data["others"][name]
        assert [s["step"] for s in other["snapshots"]] == list(entropy_lm.CONFIGS["smoke"].snapshots)
        assert dict(entropy_lm.CONFIGS["smoke"].others)[name].block == block
    assert loaded.config["train"]["steps"] == entropy_lm.CONFIGS["smoke"].train.steps


def test_user_corpus_and_bad_names(tmp_path):
    text = tmp_path / "t.txt"
    text.write_text("the quick brown fox jumps over the lazy dog\n" * 300)
    cfg = config_for(entropy_lm, "smoke", corpus_file=str(text))
    data = run_experiment("entropy-lm", cfg)
    assert data["real"]["corpus"]["name"] == "t.txt"
    with pytest.raises(ValueError, match="experiment must be one of"):
        get_experiment("nope")
    with pytest.raises(ValueError, match="snapshots must be steps"):
        config_for(entropy_lm, "smoke", snapshots=(0, 10_000))
    assert np.isfinite(data["markov"]["excess_loss"])
