"""The gpu path, proven without a GPU: every experiment's gpu config builds, steps once, and is costed."""

import dataclasses
from pathlib import Path

import pytest

from analysis.core.trials import Experiment
from analysis.core.registry import EXPERIMENTS
from analysis.models.lm import ModelConfig
from analysis.core.experiment import Workload
from analysis.compute.plan import (
    MeasuredStep,
    fit_step_model,
    h100_seconds,
    h100_step_model,
    h100_steps,
    plan_experiment,
    plan_table,
    step_cost,
)


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(EXPERIMENTS))
def test_gpu_plan_builds_steps_and_costs(name):
    est = plan_experiment(name, "gpu", execute=True)
    workloads = Experiment(EXPERIMENTS[name]).plan(EXPERIMENTS[name].CONFIGS["gpu"])
    # an experiment that only reads shapes (on the meta device) counts no FLOPs and states its seconds instead
    shapes_only = all(w.model is None and w.flops == 0 and w.overhead_s > 0 for w in workloads)
    assert est.h100_minutes > 0 and (shapes_only or (est.flops > 0 and est.peak_memory_gb > 0))
    models = [w for w in workloads if w.model is not None]
    assert len(est.stepped) == len({w.model for w in models})
    smoke = plan_experiment(name, "smoke", execute=False)
    assert smoke.flops < est.flops or shapes_only  # the gpu scale is the bigger one


def test_every_gpu_trial_fits_a_command_and_the_campaign_fits_its_leases():
    """Sized from the measured H100 steps, each model compiled once a lent command: every trial, cold, within one
    command's window with the margin the runner applies; the first tier within 210 minutes, everything within 275."""
    from analysis.compute.queue import build_queue, margin_for, split_leases, trial_window
    from analysis.compute.campaign import FIRST_TIER_PRIORITY, GPU_CAMPAIGN_S, GPU_FIRST_TIER_S, priority_of

    queue = build_queue("gpu", "h100", directory=str(Path(__file__).parent / "no-such-results"))
    longest = max(queue, key=lambda t: t.cost(set()))
    assert margin_for("h100") * longest.cost(set()) <= trial_window(), longest
    costs = [(t.experiment, c) for lease in split_leases(queue) for t, c in zip(lease.trials, lease.costs)]
    first = sum(c for name, c in costs if priority_of(EXPERIMENTS[name]) < FIRST_TIER_PRIORITY)
    total = sum(c for _, c in costs)
    assert 0 < first <= GPU_FIRST_TIER_S and first < total <= GPU_CAMPAIGN_S


def test_the_step_model_recovers_its_parameters_and_fits_the_h100_steps():
    base = h100_steps()
    a, rate = 3e-3, 2e14  # synthetic steps made by a known model are fitted exactly
    synthetic = tuple(MeasuredStep(m.label, m.model, m.batch, m.ctx,
                                   m.model.layers * a + step_cost(m.model, m.batch, m.ctx)[2] / rate, "synthetic")
                      for m in base)
    fit = fit_step_model(synthetic)
    assert fit.layer_s == pytest.approx(a, rel=1e-9) and fit.flops_per_s == pytest.approx(rate, rel=1e-9)
    assert fit.worst_error < 1e-9
    model = h100_step_model()
    assert model.layer_s > 0 and model.flops_per_s > 0
    errors = [abs(model.step_s(m.model.layers, step_cost(m.model, m.batch, m.ctx)[2]) / m.seconds - 1) for m in base]
    assert max(errors) == pytest.approx(model.worst_error)
    from analysis.compute.queue import TRIAL_MARGIN, margin_for

    # a trial the fit sizes is started with room for the fit's worst miss of a measured step (32% on the compiled
    # H100 steps: the GAU of d = 256 at batch 256), and never less than the runner's own margin
    assert margin_for("h100") == pytest.approx(max(TRIAL_MARGIN, 1 + model.worst_error))
    from analysis.compute.plan import COMPILE_PRIOR, gpu_basis

    m = base[0]
    layers = m.model.layers
    long = Workload("x", model=m.model, batch=m.batch, ctx=m.ctx, steps=1000)  # compiled, as it was timed
    compiling = COMPILE_PRIOR[0] + COMPILE_PRIOR[1] * layers  # no compile of it was timed
    assert gpu_basis("h100").compile_fit is None
    assert h100_seconds([long]) == pytest.approx(1000 * m.seconds + compiling)  # its own step, not the fit
    short = dataclasses.replace(long, steps=10)  # a run too short to compile: the eager step timed beside
    assert h100_seconds([short]) == pytest.approx(10 * m.eager_seconds)
    other = dataclasses.replace(long, batch=16)  # a model not measured at this batch: the fit
    assert h100_seconds([other]) == pytest.approx(1000 * model.step_s(layers, step_cost(m.model, 16, m.ctx)[2])
                                                  + compiling)
    with pytest.raises(ValueError, match="at least 2"):
        fit_step_model(base[:1])
    with pytest.raises(ValueError, match="positive and finite"):
        fit_step_model((base[0], MeasuredStep("bad", base[1].model, 32, 1024, 0.0, "none")))


def test_logit_scale_and_init_change_no_count_so_they_share_one():
    from analysis.compute.plan import cached_step_cost

    base = ModelConfig(d=32, layers=2, block="transformer", residual="pre", attn="cosine", ctx=16)
    other = dataclasses.replace(base, cosine_scale=3.0, attn_alpha=0.5, init="std0.02")
    assert step_cost(base, 2, 16) == step_cost(other, 2, 16) == cached_step_cost(other, 2, 16)


def test_step_cost_matches_6_params_tokens_for_a_transformer():
    cfg = ModelConfig(d=256, layers=4, block="transformer", residual="pre", ctx=64)
    params, fwd, fwd_bwd, saved = step_cost(cfg, 8, 64)
    assert fwd_bwd == pytest.approx(3 * fwd, rel=0.01)
    # 6 N T counts the matmuls against every weight; attention scores and the embedding lookup differ
    assert fwd_bwd == pytest.approx(6 * params * 8 * 64, rel=0.35)
    assert saved > 0


def test_plan_table_and_bad_workloads():
    table = plan_table([plan_experiment("ffn-basics", "gpu", execute=False)])
    assert table.count("\n") == 3 and "ffn-basics" in table and "**all**" in table
    with pytest.raises(ValueError, match="count, batch, ctx"):
        Workload("x", count=0)


@pytest.mark.parametrize("config", [
    ModelConfig(d=64, layers=5, block="gau", residual="post", s=32, ctx=32),
    ModelConfig(d=64, layers=5, block="flash", residual="pre", s=32, chunk=8, ctx=32),
    ModelConfig(d=64, layers=5, block="transformer", residual="deepnorm", ctx=32),
    ModelConfig.gpt(d=64, layers=5, heads=4, ctx=32),
])
def test_deep_stacks_are_counted_exactly_from_one_and_two_layers(config):
    from analysis.compute.cost import _step_cost_direct

    assert step_cost(config, 2, 32) == _step_cost_direct(config, 2, 32)


def test_a_stated_overhead_is_added_to_the_estimate_once_and_validated():
    counted = Workload("x", flops=1e12)
    with_compile = Workload("x", flops=1e12, overhead_s=30.0)
    assert h100_seconds([with_compile]) == pytest.approx(h100_seconds([counted]) + 30.0)
    with pytest.raises(ValueError, match="overhead_s must be finite and >= 0"):
        Workload("x", flops=1.0, overhead_s=-1.0)
