"""The gpu path, proven without a GPU: every experiment's gpu config builds, steps once, and is costed."""

import pytest

from analysis.core.trials import Experiment
from analysis.experiments import EXPERIMENTS
from analysis.models.lm import ModelConfig
from analysis.experiments.base import Workload
from analysis.plan import plan_experiment, plan_table, step_cost


@pytest.mark.parametrize("name", sorted(EXPERIMENTS))
def test_gpu_plan_builds_steps_and_costs(name):
    est = plan_experiment(name, "gpu", execute=True)
    assert est.flops > 0 and est.h100_minutes > 0 and est.peak_memory_gb > 0
    models = [w for w in Experiment(EXPERIMENTS[name]).plan(EXPERIMENTS[name].CONFIGS["gpu"]) if w.model is not None]
    assert len(est.stepped) == len({w.model for w in models})
    smoke = plan_experiment(name, "smoke", execute=False)
    assert smoke.flops < est.flops  # the gpu scale is the bigger one


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
    from analysis.cost import _step_cost_direct

    assert step_cost(config, 2, 32) == _step_cost_direct(config, 2, 32)
