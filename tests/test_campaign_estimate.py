"""The campaign's time estimate of a trial: the step model for the work, measured trials for the overhead."""

import types

import pytest

from analysis.core.campaign import CPU_ASSUMED_FLOPS, Estimator, runs_on
from analysis.experiments.base import Workload


class _Exp:
    """An experiment whose trial ``k`` is k x 10^12 counted FLOPs."""

    def __init__(self, device: str | None = None) -> None:
        self.module = types.SimpleNamespace(**({"DEVICE": device} if device else {}))

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
    assert runs_on(_Exp("cpu").module, "cuda") == "cpu" and runs_on(_Exp().module, "cuda") == "cuda"
    est = Estimator(_Exp("cpu"), None, "cuda")
    est.device_type = runs_on(est.exp.module, "cuda")
    assert est.seconds(1) == pytest.approx(1e12 / CPU_ASSUMED_FLOPS)
    with pytest.raises(ValueError, match="DEVICE must be 'cpu'"):
        runs_on(types.SimpleNamespace(DEVICE="tpu"), "cuda")


def test_flash_bench_is_a_cpu_benchmark_that_no_lease_can_fit():
    """flash-bench's gpu config at CPU rates runs far over one lent command: the campaign on a GPU machine leaves
    it for a machine with the time (its gpu record came back with every point failed when it was started)."""
    from analysis.core.campaign import GPU_LEASE_S, workload_flops
    from analysis.studies.flash.experiments import flash_bench as fb

    assert runs_on(fb, "cuda") == "cpu"
    assert workload_flops(fb.plan(fb.CONFIGS["gpu"])) / CPU_ASSUMED_FLOPS > 10 * GPU_LEASE_S
