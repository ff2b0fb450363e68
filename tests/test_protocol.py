"""Every registered experiment follows the protocol of analysis.core.experiment, and uses its seed."""

import dataclasses
import json

import pytest

from analysis.core.trials import protocol_problems
from analysis.core.registry import EXPERIMENTS, config_for, fingerprint, staleness
from analysis.core.runner import run_experiment
from analysis.core.experiment import mean_se, run_seed
from analysis.core.results import Record, provenance, to_jsonable


@pytest.mark.parametrize("name", sorted(EXPERIMENTS))
def test_conforms(name):
    assert protocol_problems(EXPERIMENTS[name]) == []


def test_a_trial_result_must_be_typed():
    """A split experiment whose run_trial returns a plain dict does not conform."""
    import types

    module = types.ModuleType("plain")
    module.__dict__.update({k: getattr(EXPERIMENTS["coord-check"], k) for k in dir(EXPERIMENTS["coord-check"])
                            if not k.startswith("__")})
    module.__doc__ = "A copy of coord-check whose trials return plain data."

    def run_trial(cfg, trial, device) -> dict:
        return {}

    module.run_trial = run_trial
    assert protocol_problems(module) == ["run_trial is not annotated to return a dataclass (or a union of them): "
                                         "its typed result"]


# the cheap experiments whose smoke data depend on random draws; the rest are covered by the verdict
# table (seed 0) and the plan test, and their seeds go through the same run_seed
SEEDED = ("attention-basics", "entropy-bound", "ffn-basics", "softmax-scale-checks", "softmax-scale-mc", "deep-gau",
          "softmax-scale-train", "norms-depth")


@pytest.mark.parametrize("name", SEEDED)
def test_run_uses_its_seed(name):
    module = EXPERIMENTS[name]
    a = json.dumps(to_jsonable(run_experiment(name, config_for(module, "smoke", seed=0))), sort_keys=True)
    b = json.dumps(to_jsonable(run_experiment(name, config_for(module, "smoke", seed=1))), sort_keys=True)
    assert a != b, f"{name}: seed 1 gives the data of seed 0"


def test_claims_take_data_and_label():
    module = EXPERIMENTS["ffn-basics"]
    data = module.run(module.CONFIGS["smoke"])
    mine, other = module.claims(data, "mylabel"), module.claims(data, "other")
    # a claim's key names the claim, the same on every run; the label is what its statement names
    assert [c.key for c in mine] == [c.key for c in other] and all("mylabel" in c.statement for c in mine)


def test_run_seed_keeps_replicates_at_seed_0_and_separates_seeds():
    cfg = EXPERIMENTS["deep-gau"].CONFIGS["smoke"]
    assert run_seed(cfg, 3) == 3
    assert run_seed(dataclasses.replace(cfg, seed=2), 3) == 20_003
    with pytest.raises(ValueError, match="replicate"):
        run_seed(cfg, 10_000)


def test_mean_se():
    assert mean_se([1.0, 3.0]) == (2.0, 1.0)
    assert mean_se([5.0]) == (5.0, 0.0)
    m, s = mean_se([])
    assert m != m and s != s


def test_unknown_override_is_refused():
    with pytest.raises(ValueError, match="corpus-file does not apply"):
        config_for(EXPERIMENTS["gau-init"], "smoke", corpus_file="x.txt")


def test_staleness_names_config_and_code_changes():
    module = EXPERIMENTS["ffn-basics"]
    cfg = module.CONFIGS["smoke"]
    fp = fingerprint(module, cfg)
    record = Record("ffn-basics", "smoke", 0, dataclasses.asdict(cfg), {}, provenance(0.0), fp)
    assert staleness(record) == []
    changed = Record("ffn-basics", "smoke", 0, {**dataclasses.asdict(cfg), "grid": 7}, {}, provenance(0.0),
                     {**fp, "config": "x", "code": "y"})
    reasons = staleness(changed)
    assert any(r.startswith("config differs (grid: 7 →") for r in reasons)
    assert "the experiment's code has changed since" in reasons
    old = Record("ffn-basics", "smoke", 0, dataclasses.asdict(cfg), {}, provenance(0.0), None)
    assert staleness(old) == ["recorded before records carried fingerprints"]


@pytest.mark.parametrize("name", sorted(n for n, m in EXPERIMENTS.items() if hasattr(m, "summary")))
def test_summary_reads_the_recorded_data(name):
    from pathlib import Path

    from analysis.core.results import find_record

    record = find_record(name, "cpu", Path(__file__).resolve().parents[1] / "results")
    assert record is not None, f"{name} has a summary() but no cpu record to read"
    out = EXPERIMENTS[name].summary(record.data)
    assert isinstance(out, dict) and out


DECLARING = [n for n in sorted(EXPERIMENTS) if hasattr(EXPERIMENTS[n], "claim_trials")]


def test_the_decisive_experiments_declare_the_trials_their_claims_read():
    assert {"flash-bench", "gau-length", "gau-quality"} <= set(DECLARING)


@pytest.mark.parametrize("name", DECLARING)
def test_a_claim_decided_from_its_own_trials_is_the_records_claim(name, tmp_path):
    """For every claim an experiment declares the trials of: its smoke trials alone, stored as a partial campaign,
    decide that claim with the statement, measured value and verdict the whole record gives it (or, like the record,
    make no such claim), and decide no claim whose trials are missing."""
    import math
    import os

    from analysis.core.runner import TrialTask, _cached, run_in_process
    from analysis.core.trials import Experiment, claim_reads, decided_claims, save_trial

    exp = Experiment(EXPERIMENTS[name])
    cfg = config_for(exp.module, "smoke")
    cache = os.environ.get("ANALYSIS_LIVE_CACHE") or str(tmp_path / "cache")
    data, _ = run_in_process(exp, "smoke", cfg, cache=cache)
    full = {c.key: c for c in exp.module.claims(data, "run")}
    reads = claim_reads(exp, cfg)
    for key, keys in reads.items():
        folder = tmp_path / key
        for t in exp.trials(cfg):
            if t.key in keys:
                save_trial(_cached(TrialTask(name, "smoke", cfg, t, exp.trial_id(cfg, t), 1), exp.code, cache), folder)
        decided = decided_claims(exp, "smoke", cfg, folder)
        assert decided is not None and key in decided.keys and decided.total == len(exp.trials(cfg))
        assert all(set(reads[k]) <= set(keys) for k in decided.keys)  # nothing decided beyond its trials
        got = {c.key: c for c in exp.module.claims(decided.data, "run") if c.key in decided.keys}
        assert (key in got) == (key in full), key
        if key in full:
            a, b = got[key], full[key]
            same = a.measured == b.measured or (math.isnan(a.measured) and math.isnan(b.measured))
            assert same and a.verdict == b.verdict and a.statement == b.statement, key
