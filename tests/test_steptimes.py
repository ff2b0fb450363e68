"""Step-time benchmark: the models a scale trains, timed through the trainer, saved, read back and fitted."""

import dataclasses
import json

import pytest
import torch

from analysis.models.lm import ModelConfig
from analysis.compute.plan import benchmarked_steps, cached_step_cost, fit_step_model
from analysis.compute.steptimes import device_tag, load, save, time_steps, training_models


def test_training_models_are_distinct_and_cover_the_plan():
    from analysis.core.trials import Experiment
    from analysis.core.registry import EXPERIMENTS

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
    from analysis.cli.main import STEP_COMPILE_MODES
    from analysis.compute.steptimes import COMPILE_MODES

    assert STEP_COMPILE_MODES == COMPILE_MODES
    cfg = ModelConfig(d=32, layers=1, block="transformer", ctx=16)
    eager = time_steps("a", cfg, 4, 16, torch.device("cpu"), 2, 1, compile_mode="eager")
    assert eager.compile_mode == "eager" and eager.compiled is None  # eager as asked, not a failed compile
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


def test_timed_steps_replace_the_hand_timed_ones_and_are_never_fitted_with_them(tmp_path):
    """The trainer's compiled steps and the eager steps timed by hand are two step paths: the campaign is sized by the
    device's own steptimes record, else an H100's, else the hand-timed H100 steps, never a mix."""
    from analysis.compute.plan import gpu_steps, gpu_steps_basis, hand_measured_h100_steps

    hand = hand_measured_h100_steps()
    assert gpu_steps("h200", tmp_path) == hand and "timed by hand" in gpu_steps_basis("h200", tmp_path)
    a = time_steps("a", ModelConfig(d=32, layers=1, block="transformer", ctx=16), 4, 16, torch.device("cpu"), 2, 1)
    b = time_steps("b", ModelConfig(d=64, layers=4, block="transformer", ctx=32), 4, 32, torch.device("cpu"), 2, 1)
    save([a], "gpu", tmp_path).rename(tmp_path / "steptimes.gpu.h200.json")
    assert gpu_steps("h200", tmp_path) == hand  # one timed step cannot fit two terms: still the hand-timed steps
    save([a, b], "gpu", tmp_path).rename(tmp_path / "steptimes.gpu.h200.json")
    timed = gpu_steps("h200", tmp_path)
    assert [s.seconds for s in timed] == [a.seconds, b.seconds] and not set(timed) & set(hand)
    assert "steptimes.gpu.h200.json" in gpu_steps_basis("h200", tmp_path)
    assert gpu_steps("h100", tmp_path) == hand  # an H200's steps do not size an H100
    (tmp_path / "steptimes.gpu.h200.json").rename(tmp_path / "steptimes.gpu.h100.json")
    for tag in ("h200", "h100"):  # an H100's steps, for a kind without its own
        assert [(s.seconds, s.source) for s in gpu_steps(tag, tmp_path)] == [(a.seconds, "steptimes.gpu.h100.json"),
                                                                             (b.seconds, "steptimes.gpu.h100.json")]


@pytest.mark.parametrize("name, tag", [("NVIDIA H100 80GB HBM3", "h100"), ("NVIDIA H200", "h200"),
                                       ("CPU: AMD EPYC 7B13 (2 cores)", "cpu"), ("NVIDIA A100-SXM4-40GB", "a100")])
def test_device_tags(name, tag):
    assert device_tag(name) == tag


def test_cli_times_records_and_refuses_with_one_line(tmp_path, capsys):
    from analysis.cli.main import main

    assert main(["steptimes", "--scale", "smoke", "--only", "gau-length", "--repeats", "1", "--out",
                 str(tmp_path), "--quiet"]) == 0
    out = capsys.readouterr().out
    assert "recorded" in out and "fitted:" in out and (tmp_path / "steptimes.smoke.cpu.json").exists()
    assert main(["steptimes", "--scale", "smoke", "--budget", "soon"]) == 2
    assert len(capsys.readouterr().err.strip().splitlines()) == 1


def test_efficiency_targets_are_the_issue_sizes():
    """At gpu scale: three architectures of at least 100 M parameters at 1,024 tokens held to 35% of the bf16 peak,
    and the d = 256 GAU timed by hand on the eager path held to 10x its tokens/s, at its own batch and at 256."""
    import dataclasses

    from analysis.compute.plan import hand_measured_h100_steps
    from analysis.compute.steptimes import PEAK_FRACTION_TARGET, SPEEDUP_TARGET, TARGET_MIN_PARAMS
    from analysis.studies.flash.targets import efficiency_targets

    targets = efficiency_targets("gpu")
    big = [t for t in targets if t.min_peak_fraction is not None]
    assert {t.model.block for t in big} == {"transformer", "gau", "flash"}
    for t in big:
        assert t.ctx == t.model.ctx == 1024 and t.min_peak_fraction == PEAK_FRACTION_TARGET == 0.35
        assert cached_step_cost(t.model, t.batch, t.ctx)[0] >= TARGET_MIN_PARAMS and t.reference is None
    ref = hand_measured_h100_steps()[0]
    small = [t for t in targets if t.reference is not None]
    assert [t.batch for t in small] == [ref.batch, 256] and all(t.min_speedup == SPEEDUP_TARGET == 10 for t in small)
    assert all(t.model == dataclasses.replace(ref.model, gau_backend="auto") and t.ctx == ref.ctx for t in small)
    assert len({t.name for t in targets}) == len(targets)
    assert [t.name for t in efficiency_targets("smoke")] == [t.name for t in targets]
    with pytest.raises(ValueError, match="scale must be gpu"):
        efficiency_targets("cpu")


def test_a_target_is_met_only_when_measured_and_at_its_threshold():
    from analysis.compute.plan import H100_BF16_DENSE_FLOPS, hand_measured_h100_steps
    from analysis.compute.steptimes import StepTiming, Target, TargetResult

    cfg = ModelConfig(d=32, layers=1, block="transformer", ctx=16)

    ref = hand_measured_h100_steps()[0]

    def timing(seconds, flops=1e12):
        return StepTiming("t", {}, ref.batch, ref.ctx, 1, 10, flops, seconds, seconds, seconds, 3)

    at = 1e12 / (0.35 * H100_BF16_DENSE_FLOPS)  # the seconds at which 1 TFLOP a step is 35% of the peak
    peak = Target("p", "p", cfg, 4, 16, min_peak_fraction=0.35)
    assert TargetResult(peak, timing(0.99 * at), timing(at), True).met is True
    assert TargetResult(peak, timing(1.01 * at), timing(at), True).met is False
    assert TargetResult(peak, timing(0.5 * at), timing(at), False).met is None
    fast = Target("s", "s", cfg, ref.batch, ref.ctx, reference=ref, min_speedup=10.0)
    r = TargetResult(fast, timing(ref.seconds / 10.5), timing(ref.seconds / 2), True)
    assert r.speedup == pytest.approx(10.5) and r.eager_speedup == pytest.approx(5.25) and r.met is True
    assert TargetResult(fast, timing(ref.seconds / 9.5), timing(ref.seconds), True).met is False
    assert "NOT met" in TargetResult(fast, timing(ref.seconds / 9.5), timing(ref.seconds), True).line()


def test_cli_times_the_targets_on_a_cpu_at_smoke_scale_only(tmp_path, capsys):
    from analysis.cli.main import main

    assert main(["steptimes", "--targets", "--scale", "smoke", "--repeats", "1", "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert out.count("not a measurement") == 5 and "recorded" in out
    path = tmp_path / "efficiency.smoke.cpu.json"
    doc = json.loads(path.read_text())
    rows = doc["rows"]
    assert len(rows) == 5 and all(r["met"] is None and r["seconds"] > 0 and r["eager_seconds"] > 0 for r in rows)
    # a run cut short (a lease's deadline) is resumed: only the targets without a row are timed again
    path.write_text(json.dumps({**doc, "rows": rows[:1] + rows[2:]}))
    assert main(["steptimes", "--targets", "--scale", "smoke", "--repeats", "1", "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert out.count("not a measurement") == 1 and "beside 4 target(s) recorded before" in out
    again = json.loads(path.read_text())["rows"]
    assert [r["name"] for r in again] == [r["name"] for r in rows] and again[0] == rows[0] and again[1] != rows[1]
    assert main(["steptimes", "--targets", "--scale", "smoke", "--out", str(tmp_path)]) == 0
    assert "every target is recorded" in capsys.readouterr().out
    for argv in (["--targets"], ["--targets", "--scale", "smoke", "--only", "gau-length"]):
        assert main(["steptimes", *argv]) == 2
        assert len(capsys.readouterr().err.strip().splitlines()) == 1


def test_models_that_cost_the_campaign_most_are_timed_first():
    from analysis.core.trials import Experiment
    from analysis.core.registry import EXPERIMENTS
    from analysis.compute.plan import h100_seconds

    names = ["deep-gau", "gau-quality"]
    models = training_models("gpu", names)
    cost = {}
    for name in names:
        exp = Experiment(EXPERIMENTS[name])
        for w in exp.plan(EXPERIMENTS[name].CONFIGS["gpu"]):
            if w.model is not None and w.steps > 0:
                cost[(w.model, w.batch, w.ctx)] = cost.get((w.model, w.batch, w.ctx), 0.0) + h100_seconds([w])
    seconds = [cost[(m, b, n)] for _, m, b, n, _ in models]
    assert len(seconds) == len(cost) and seconds == sorted(seconds, reverse=True) and seconds[0] > seconds[-1]


def test_step_times_of_a_vocabulary_wider_than_a_byte():
    """A model whose vocabulary outgrows one byte (a recall task's) is timed on int32 tokens, not uint8 ones."""
    timing = time_steps("wide", ModelConfig(vocab=300, d=32, layers=1, block="transformer", ctx=16), 2, 16,
                        torch.device("cpu"), 1, 0, compile_mode="eager")
    assert timing.model["vocab"] == 300 and timing.seconds > 0


def _trainer_that_compiles(monkeypatch, first_step_sleep: float):
    """train_lm as on a GPU where compile ran (log.compiled True whenever a mode is asked), its first step slowed by
    ``first_step_sleep`` seconds as compiling slows it; returns the modes it was called with."""
    import time

    import analysis.compute.steptimes as steptimes

    real, modes = steptimes.train_lm, []

    def fake(model, tokens, cfg, ctx, device, on_step=None, compile_mode=None, **kw):
        modes.append(compile_mode)

        def slowed(step, m):
            if step == 0 and compile_mode is not None:
                time.sleep(first_step_sleep)
            on_step(step, m)

        log = real(model, tokens, cfg, ctx, device, on_step=slowed, compile_mode=None, **kw)
        log.compiled = True if compile_mode is not None else None
        return log

    monkeypatch.setattr(steptimes, "train_lm", fake)  # the trainer as the step-time benchmark calls it
    return modes


def test_a_compiled_model_is_timed_with_its_overhead_and_beside_its_eager_step(monkeypatch, tmp_path):
    """The untimed first steps' time beyond as many median steps is the run's overhead (a compile's 0.3 s shows in
    it); a compiled model is timed again eagerly, so that the steps after which compiling pays are measured."""
    modes = _trainer_that_compiles(monkeypatch, 0.3)
    cfg = ModelConfig(d=32, layers=2, block="transformer", ctx=16)
    t = time_steps("c", cfg, 4, 16, torch.device("cpu"), repeats=3, warmup=1, compile_mode="default")
    assert modes == ["default", None] and t.compiled is True
    # overhead = 0.3 s + the two untimed steps' own time - 2 median steps, so at least 0.3 s - 2 median steps
    assert 0.3 - 2 * t.seconds <= t.overhead_s < 0.3 + 5.0 and t.eager_seconds is not None and t.eager_seconds > 0
    assert t.break_even_steps == (t.overhead_s / (t.eager_seconds - t.seconds) if t.eager_seconds > t.seconds
                                  else float("inf"))
    assert load(save([t], "smoke", tmp_path)) == [t]
    step = t.measured_step("f.json")
    assert (step.compiled, step.overhead_s, step.eager_seconds) == (True, t.overhead_s, t.eager_seconds)
    modes.clear()
    lone = time_steps("c", cfg, 4, 16, torch.device("cpu"), repeats=3, warmup=1, compile_mode="default",
                      eager_too=False)
    assert modes == ["default"] and lone.eager_seconds is None and lone.break_even_steps is None
    modes.clear()
    eager = time_steps("c", cfg, 4, 16, torch.device("cpu"), repeats=3, warmup=1, compile_mode="eager")
    assert modes == [None] and eager.compiled is None and eager.eager_seconds is None
    assert 0 <= eager.overhead_s < 0.3  # no compile: nothing of the slowed first step
    faster = dataclasses.replace(t, seconds=0.01, eager_seconds=0.03, overhead_s=40.0)
    slower = dataclasses.replace(t, seconds=0.03, eager_seconds=0.02)
    assert faster.break_even_steps == pytest.approx(2000.0) and slower.break_even_steps == float("inf")


def _measured(model, batch, ctx, seconds, compiled=None, overhead=None, eager=None):
    from analysis.compute.plan import MeasuredStep

    return MeasuredStep("m", model, batch, ctx, seconds, "steptimes.gpu.h100.json", compiled, overhead, eager)


def test_a_measured_model_is_sized_by_its_own_step_and_overhead_any_other_by_the_fits():
    """A run of a timed model costs its own measured step (compiled or eager, as the run trains) and the overhead its
    timing measured; any other model the fitted step and, when its run compiles, the compile overhead fitted to the
    timed ones (a + b L, both >= 0); the cost-free fields (logit scale, init) do not make a model another."""
    from analysis.core.experiment import Workload
    from analysis.compute.plan import fit_compile_overhead, run_compiles, step_basis
    from analysis.training.train import COMPILE_MIN_STEPS

    small = ModelConfig(d=32, layers=2, block="transformer", ctx=16)
    deep = ModelConfig(d=32, layers=8, block="transformer", ctx=16)
    other = ModelConfig(d=64, layers=4, block="gau", s=16, ctx=16)
    steps = (_measured(small, 4, 16, 0.010, True, 12.0, 0.030), _measured(deep, 4, 16, 0.020, True, 30.0, 0.050))
    basis = step_basis(steps)
    assert basis.compile_fit == pytest.approx((6.0, 3.0)) and basis.compile_overhead_s(4) == pytest.approx(18.0)
    long, short = COMPILE_MIN_STEPS, COMPILE_MIN_STEPS - 1
    assert run_compiles(long) and not run_compiles(short) and not run_compiles(0)
    scaled = dataclasses.replace(small, attn_alpha=2.0, init="std0.02")
    assert basis.seconds([Workload("a", model=scaled, batch=4, ctx=16, steps=long, count=2)]) == pytest.approx(
        2 * (long * 0.010 + 12.0))
    assert basis.seconds([Workload("b", model=small, batch=4, ctx=16, steps=short)]) == pytest.approx(short * 0.030)
    fwd_bwd = cached_step_cost(other, 4, 16)[2]
    assert basis.seconds([Workload("c", model=other, batch=4, ctx=16, steps=long)]) == pytest.approx(
        long * basis.model.step_s(4, fwd_bwd) + 18.0)
    assert basis.seconds([Workload("d", model=other, batch=4, ctx=16, steps=short)]) == pytest.approx(
        short * basis.model.step_s(4, fwd_bwd))
    eager_only = step_basis(tuple(dataclasses.replace(m, compiled=None, overhead_s=0.5, eager_seconds=None)
                                  for m in steps))
    from analysis.compute.plan import COMPILE_PRIOR

    # none measured: the stated prior, never nothing (a compile of a 96-layer stack is minutes, not free)
    assert eager_only.compile_fit is None and eager_only.compile_overhead_s(96) == COMPILE_PRIOR[0] + 96 * COMPILE_PRIOR[1]
    assert eager_only.seconds([Workload("e", model=small, batch=4, ctx=16, steps=short)]) == pytest.approx(
        short * 0.010 + 0.5)
    # a compiled run of a model timed only eagerly: the fit (a compile is not what its timing measured)
    assert eager_only.seconds([Workload("f", model=small, batch=4, ctx=16, steps=long)]) == pytest.approx(
        long * eager_only.model.step_s(2, cached_step_cost(small, 4, 16)[2]) + eager_only.compile_overhead_s(2))
    assert fit_compile_overhead(steps[:1]) == pytest.approx((0.0, 6.0))  # one layer count: proportional to L
    assert fit_compile_overhead(()) is None
