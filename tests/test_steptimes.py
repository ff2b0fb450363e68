"""Step-time benchmark: the models a scale trains, timed through the trainer, saved, read back and fitted."""

import json

import pytest
import torch

from analysis.models.lm import ModelConfig
from analysis.plan import benchmarked_steps, cached_step_cost, fit_step_model
from analysis.steptimes import device_tag, load, save, time_steps, training_models


def test_training_models_are_distinct_and_cover_the_plan():
    from analysis.core.trials import Experiment
    from analysis.experiments import EXPERIMENTS

    models = training_models("smoke", ["deep-gau", "gau-quality"])
    keys = [(m, b, n) for _, m, b, n, _ in models]
    assert len(keys) == len(set(keys)) and all(label.split(":")[0] in ("deep-gau", "gau-quality")
                                               for label, *_ in models)
    exp = Experiment(EXPERIMENTS["deep-gau"])
    cfg = EXPERIMENTS["deep-gau"].CONFIGS["smoke"]
    trained = {(w.model, w.batch, w.ctx) for w in exp.plan(cfg) if w.model is not None and w.steps > 0}
    assert trained <= set(keys) and all(steps > 0 for *_, steps in models)


def test_a_timed_step_is_the_trainers_and_round_trips(tmp_path):
    cfg = ModelConfig(d=32, layers=2, block="gau", s=16, ctx=16)
    t = time_steps("tiny GAU", cfg, 4, 16, torch.device("cpu"), repeats=3, warmup=1)
    assert t.steps == 3 and 0 < t.fastest <= t.seconds <= t.slowest
    assert t.flops == cached_step_cost(cfg, 4, 16)[2] and t.layers == 2 and t.parameters > 0
    assert t.tokens_per_s == pytest.approx(64 / t.seconds)
    path = save([t, t], "smoke", tmp_path)
    assert path.name == "steptimes.smoke.cpu.json"
    assert load(path) == [t, t]
    assert json.loads(path.read_text())["provenance"]["device"].startswith("CPU")
    with pytest.raises(ValueError, match="repeats must be"):
        time_steps("x", cfg, 4, 16, torch.device("cpu"), repeats=0)
    with pytest.raises(ValueError, match="at least one"):
        save([], "smoke", tmp_path)
    with pytest.raises(ValueError, match="compile_mode must be one of"):
        time_steps("x", cfg, 4, 16, torch.device("cpu"), compile_mode="fast")


def test_timings_in_another_compile_mode_stay_out_of_the_fit(tmp_path):
    """A comparison run (here eager, named as on an H100) is written beside the experiments' own timings, under its
    mode's name, which the step-time fit does not read; the CLI's choices are the benchmark's."""
    from analysis.__main__ import STEP_COMPILE_MODES
    from analysis.steptimes import COMPILE_MODES

    assert STEP_COMPILE_MODES == COMPILE_MODES
    cfg = ModelConfig(d=32, layers=1, block="transformer", ctx=16)
    eager = time_steps("a", cfg, 4, 16, torch.device("cpu"), 2, 1, compile_mode="eager")
    assert eager.compile_mode == "eager"
    path = save([eager], "gpu", tmp_path)
    assert path.name == "steptimes.gpu.cpu.eager.json" and load(path) == [eager]
    path.rename(tmp_path / "steptimes.gpu.h100.eager.json")
    assert benchmarked_steps("h100", tmp_path) == ()
    auto = time_steps("a", cfg, 4, 16, torch.device("cpu"), 2, 1)
    with pytest.raises(ValueError, match="share one compile mode"):
        save([auto, eager], "gpu", tmp_path)


def test_benchmarked_h100_steps_feed_the_step_model(tmp_path):
    a = time_steps("a", ModelConfig(d=32, layers=1, block="transformer", ctx=16), 4, 16, torch.device("cpu"), 2, 1)
    b = time_steps("b", ModelConfig(d=64, layers=4, block="transformer", ctx=32), 4, 32, torch.device("cpu"), 2, 1)
    path = save([a, b], "gpu", tmp_path)
    path.rename(tmp_path / "steptimes.gpu.h100.json")  # as an H100 would name it
    steps = benchmarked_steps("h100", tmp_path)
    assert [s.seconds for s in steps] == [a.seconds, b.seconds] and steps[1].model.layers == 4
    fit = fit_step_model(steps)
    assert fit.worst_error >= 0 and (fit.layer_s > 0 or fit.flops_per_s < float("inf"))
    assert benchmarked_steps("h200", tmp_path) == ()


@pytest.mark.parametrize("name, tag", [("NVIDIA H100 80GB HBM3", "h100"), ("NVIDIA H200", "h200"),
                                       ("CPU: AMD EPYC 7B13 (2 cores)", "cpu"), ("NVIDIA A100-SXM4-40GB", "a100")])
def test_device_tags(name, tag):
    assert device_tag(name) == tag


def test_cli_times_records_and_refuses_with_one_line(tmp_path, capsys):
    from analysis.__main__ import main

    assert main(["steptimes", "--scale", "smoke", "--only", "gau-length", "--repeats", "1", "--out",
                 str(tmp_path), "--quiet"]) == 0
    out = capsys.readouterr().out
    assert "recorded" in out and "fitted:" in out and (tmp_path / "steptimes.smoke.cpu.json").exists()
    assert main(["steptimes", "--scale", "smoke", "--budget", "soon"]) == 2
    assert len(capsys.readouterr().err.strip().splitlines()) == 1
