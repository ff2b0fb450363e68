"""The campaign's time estimate of a trial: the step model for the work, measured trials for the overhead."""

import types

import pytest

from analysis.compute.campaign import CPU_ASSUMED_FLOPS, Estimator, runs_on
from analysis.core.experiment import Workload


class _Exp:
    """An experiment whose trial ``k`` is k x 10^12 counted FLOPs."""

    module = types.SimpleNamespace()

    def trial_plan(self, cfg, trial):
        return [Workload(f"trial {trial}", flops=trial * 1e12)]


def test_one_short_trial_measures_overhead_and_is_not_scaled_by_flops():
    """A trial of 1 TFLOP that took 60 s more than the model says (compiling) sizes a 1,000 TFLOP trial at the
    model's time plus those 60 s, not at its own seconds times 1,000."""
    est = Estimator(_Exp(), None, "cpu")
    model_1 = 1e12 / CPU_ASSUMED_FLOPS  # 100 s at the assumed CPU rate
    est.points.append((1e12, model_1 + 60.0, model_1))
    assert est.measured
    assert est.seconds(1000) == pytest.approx(1000 * model_1 + 60.0)  # the model's work, the measured overhead
    assert est.seconds(1000) < 1000 * (model_1 + 60.0)  # not the first trial's seconds scaled by the FLOP ratio


def test_trials_at_two_flop_counts_fit_a_line():
    est = Estimator(_Exp(), None, "cpu")
    est.points += [(1e12, 12.0, 100.0), (3e12, 32.0, 300.0)]  # 2 s overhead, 10 s per TFLOP on this machine
    assert est.line() == pytest.approx((2.0, 1e-11))
    assert est.seconds(10) == pytest.approx(102.0)
    est.points.append((2e12, 1.0, 200.0))  # a fit with a negative intercept is not used: back to the model
    assert est.line() is None


def test_a_cpu_benchmark_is_sized_at_cpu_rates_on_a_gpu_machine():
    """An experiment whose config says device "cpu" runs there whatever the machine has: its trials are sized at
    CPU rates; a config without a device runs on the machine's, and any other device is refused."""
    cpu_cfg, gpu_cfg = types.SimpleNamespace(device="cpu"), types.SimpleNamespace(device="cuda")
    assert runs_on(cpu_cfg, "cuda") == "cpu" and runs_on(gpu_cfg, "cpu") == "cuda"
    assert runs_on(types.SimpleNamespace(), "cuda") == "cuda" and runs_on(None, "cpu") == "cpu"
    est = Estimator(_Exp(), cpu_cfg, runs_on(cpu_cfg, "cuda"))
    assert est.seconds(1) == pytest.approx(1e12 / CPU_ASSUMED_FLOPS)
    with pytest.raises(ValueError, match="device must be 'cpu' or 'cuda'"):
        runs_on(types.SimpleNamespace(device="tpu"), "cuda")


def test_flash_bench_runs_on_the_gpu_at_gpu_scale_and_on_the_cpu_below():
    """flash-bench's speed and memory claims are about accelerators: its gpu config runs every point on CUDA (in
    one process, where the address-space cap means nothing), its smoke and cpu configs on the CPU."""
    from analysis.studies.flash.experiments import flash_bench as fb

    assert runs_on(fb.CONFIGS["gpu"], "cpu") == "cuda" and not fb.CONFIGS["gpu"].isolate
    assert {runs_on(fb.CONFIGS[s], "cuda") for s in ("smoke", "cpu")} == {"cpu"}
