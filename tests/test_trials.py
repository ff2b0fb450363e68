"""Trials: identity, files written atomically and validated on load, status, and records assembled from them."""

import json

import pytest

from analysis.core.trial import Trial
from analysis.core.trials import (
    Experiment,
    TrialFile,
    assemble_record,
    load_trial,
    save_trial,
    stored_trials,
    trial_id,
    trial_path,
    trial_status,
)
from analysis.core.registry import EXPERIMENTS
from analysis.core.runner import run_experiment
from analysis.core.results import ResultsFileError, find_record, to_jsonable


def test_trial_checks_its_key_seed_and_params():
    Trial("recall.relu2_ns.seed0", 3, {"norm": "relu2_ns", "lr": 1e-3})
    with pytest.raises(ValueError, match="trial key"):
        Trial("a b", 0)
    with pytest.raises(ValueError, match="trial seed"):
        Trial("a", -1)
    with pytest.raises(ValueError, match="plain data"):
        Trial("a", 0, {"x": object()})


def test_trial_id_follows_config_data_version_and_trial():
    t = Trial("a", 1, {"x": 1})
    base = trial_id("e", {"d": 8}, 1, t)
    assert base == trial_id("e", {"d": 8}, 1, Trial("a", 1, {"x": 1})) and len(base) == 16
    assert len({base, trial_id("e", {"d": 9}, 1, t), trial_id("e", {"d": 8}, 2, t), trial_id("f", {"d": 8}, 1, t),
                trial_id("e", {"d": 8}, 1, Trial("a", 2, {"x": 1})), trial_id("e", {"d": 8}, 1, Trial("a", 1, {"x": 2}))
                }) == 6


def test_split_experiment_trials_are_its_grid():
    exp = Experiment(EXPERIMENTS["gau-length"])
    cfg = exp.module.CONFIGS["cpu"]
    trials = exp.trials(cfg)
    assert exp.split and len(trials) == 2 * len(cfg.norms) * len(cfg.seeds)
    assert len({exp.trial_id(cfg, t) for t in trials}) == len(trials)
    # plan is derived from the trials: one model per trial
    assert len(exp.plan(cfg)) == len(trials)


def test_a_module_without_trials_is_one_trial():
    exp = Experiment(EXPERIMENTS["ffn-basics"])
    cfg = exp.module.CONFIGS["smoke"]
    (only,) = exp.trials(cfg)
    assert not exp.split and only.key == "all" and only.seed == cfg.seed
    assert exp.trial_plan(cfg, only) == exp.module.plan(cfg)


def _file(exp, cfg, trial, result, wall=1.0, code=None):
    prov = {"device": "CPU: test", "torch": "t", "cuda": None, "python": "3", "git_commit": "c", "git_dirty": False,
            "date": "2026-01-01", "wall_time_s": wall, "device_type": "cpu"}
    return TrialFile(exp.name, "smoke", trial.key, exp.trial_id(cfg, trial), trial.seed, dict(trial.params), result,
                     prov, {"config": "x", "code": code or exp.code, "data_version": exp.module.DATA_VERSION})


def test_trial_files_round_trip_and_a_broken_one_names_itself(tmp_path):
    exp = Experiment(EXPERIMENTS["gau-length"])
    cfg = exp.module.CONFIGS["smoke"]
    t = exp.trials(cfg)[0]
    path = save_trial(_file(exp, cfg, t, {"loss": float("nan"), "x": [1, 2]}), tmp_path)
    assert path == trial_path(_file(exp, cfg, t, {}), tmp_path) and path.name.startswith(t.key + ".")
    loaded = load_trial(path)
    assert loaded.result == {"loss": "nan", "x": [1, 2]} and loaded.key == t.key
    assert list(path.parent.glob("*.tmp")) == []
    path.write_text(path.read_text()[:50])
    with pytest.raises(ResultsFileError, match=str(path)):
        load_trial(path)
    path.write_text(json.dumps({"schema": "analysis.trial/1", "key": 3}))
    with pytest.raises(ResultsFileError, match="malformed trial file"):
        load_trial(path)


def test_status_counts_done_missing_and_stale_and_the_record_waits_for_all(tmp_path):
    exp = Experiment(EXPERIMENTS["gau-length"])
    cfg = exp.module.CONFIGS["smoke"]
    data = run_experiment("gau-length", cfg)
    trials = exp.trials(cfg)
    for t, r in list(zip(trials, data["runs"]))[:3]:
        save_trial(_file(exp, cfg, t, r, code="0" * 16 if t is trials[0] else None), tmp_path)
    status = trial_status(exp, "smoke", cfg, tmp_path)
    assert (len(status.done), len(status.missing), len(status.stale)) == (3, len(trials) - 3, 1)
    assert status.describe() == f"3 of {len(trials)} trials (1 made by older code)"
    record, _ = assemble_record(exp, "smoke", cfg, tmp_path)
    assert record is None and find_record("gau-length", "smoke", tmp_path) is None  # partial: no record
    for t, r in list(zip(trials, data["runs"]))[3:]:
        save_trial(_file(exp, cfg, t, r), tmp_path)
    record, status = assemble_record(exp, "smoke", cfg, tmp_path)
    assert status.complete and record.trials == {"total": len(trials), "done": len(trials)}
    assert record.fingerprint["code"] == "mixed"  # one trial came from other code
    assert find_record("gau-length", "smoke", tmp_path).data == to_jsonable(data)
    assert record.provenance["wall_time_s"] == len(trials) * 1.0
    assert len(stored_trials("gau-length", "smoke", tmp_path)) == len(trials)


def test_a_record_never_mixes_kinds_of_gpu(tmp_path):
    """Trials made on an H100 and on an H200 assemble no record and decide no claim: a step time or a peak fraction
    read across the two would describe neither. One kind, or CPU trials beside it, is fine."""
    import pytest as _pytest

    from analysis.core.trials import (Experiment, MixedDevicesError, TrialFile, assemble_record, check_one_kind,
                                      device_kinds, save_trial)
    from analysis.core.registry import EXPERIMENTS
    from analysis.core.results import provenance

    def made_on(device, kind="cuda"):
        return TrialFile("x", "gpu", "k", "i", 0, {}, {}, {**provenance(1.0), "device": device, "device_type": kind},
                         {})

    h100, h200 = made_on("NVIDIA H100 80GB HBM3"), made_on("NVIDIA H200")
    assert device_kinds([h100, h200, made_on("CPU: x (2 cores)", "cpu")]) == ["h100", "h200"]
    check_one_kind([h100, h100, made_on("CPU: x", "cpu")], "x")
    with _pytest.raises(MixedDevicesError, match="ran on h100 and h200"):
        check_one_kind([h100, h200], "x")
    exp = Experiment(EXPERIMENTS["entropy-bound"])
    cfg = exp.module.CONFIGS["smoke"]
    (trial,) = exp.trials(cfg)
    from analysis.core.runner import TrialTask, execute

    tf = execute(TrialTask(exp.name, "smoke", cfg, trial, exp.trial_id(cfg, trial), 1))
    import dataclasses

    save_trial(dataclasses.replace(tf, provenance={**tf.provenance, "device": "NVIDIA H100 80GB HBM3",
                                                   "device_type": "cuda"}), tmp_path)
    record, _ = assemble_record(exp, "smoke", cfg, tmp_path, write=False)
    assert record is not None  # one kind
