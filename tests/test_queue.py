"""The gpu campaign's queue: ordered so that each lent command decides claims, sized from measured steps, split into
lent commands as the runner runs it, with each model compiled once a command."""

import pytest

from analysis.compute import queue as q
from analysis.core.trials import Experiment, TrialFile, save_trial
from analysis.core.registry import EXPERIMENTS, config_for
from analysis.core.results import provenance


def _trial(experiment, key, seconds, compiles=None, claims=()):
    return q.QueuedTrial(experiment, key, key, seconds, compiles or {}, tuple(claims))


def test_claims_come_first_and_in_the_order_of_their_stakes():
    """flash-bench's claim-bearing trials, then the headline comparison seed by seed, then gau-length's; the trials no
    claim reads (figures only) after the first tier."""
    queue = q.build_queue("gpu", "h100", ["flash-bench", "gau-length", "gau-quality"])
    order = [(t.experiment, t.key) for t in queue]
    reads = {name: EXPERIMENTS[name].claim_trials(config_for(EXPERIMENTS[name], "gpu"))
             for name in ("flash-bench", "gau-length", "gau-quality")}
    bench = {k for keys in reads["flash-bench"].values() for k in keys}
    length = {k for keys in reads["gau-length"].values() for k in keys}
    head = reads["gau-quality"]["flashquad-beats-transformer"]
    first = [k for e, k in order[:len(bench)]]
    assert set(first) == bench and all(e == "flash-bench" for e, _ in order[:len(bench)])
    nxt = order[len(bench):len(bench) + len(head)]
    assert [k for _, k in nxt] == head and all(e == "gau-quality" for e, _ in nxt)
    assert head[:4] == ["text.transformer.lr0.001.seed0", "text.transformer.lr0.003.seed0",
                        "text.flash-quad-post.lr0.001.seed0", "text.flash-quad-post.lr0.003.seed0"]
    after = order[len(bench) + len(head):len(bench) + len(head) + len(length)]
    assert {k for _, k in after} == length and all(e == "gau-length" for e, _ in after)
    figures = [k for e, k in order if e == "flash-bench"][len(bench):]
    assert set(figures) == {t.key for t in Experiment(EXPERIMENTS["flash-bench"]).trials(
        config_for(EXPERIMENTS["flash-bench"], "gpu"))} - bench
    assert order.index(("flash-bench", figures[0])) > order.index(("gau-quality", head[-1]))
    assert all(t.claims for t in queue if t.key in head) and not any(
        t.claims for t in queue if t.experiment == "flash-bench" and t.key in figures)


def test_each_model_compiles_once_a_command_and_the_split_is_the_runners():
    a = _trial("x", "a", 100.0, {"m": 60.0}, ["c1"])
    b = _trial("x", "b", 100.0, {"m": 60.0}, ["c1"])
    c = _trial("x", "c", 300.0, {"n": 90.0}, ["c2"])
    d = _trial("y", "d", 10.0, {}, ["c3"])
    window = q.trial_window(400.0)  # 400 - START_S - END_S = 340 s
    assert window == pytest.approx(400.0 - q.START_S - q.END_S)
    leases = q.split_leases([a, b, c, d], command_s=400.0, margin=1.0)
    # a (160 with its compile) and b (100: m is compiled) fit 340; c (390) does not, but d, later, does: the
    # runner starts the first trial that fits
    assert [[t.key for t in lease.trials] for lease in leases] == [["a", "b", "d"], ["c"]]
    assert leases[0].compile_s == 60.0 and leases[0].seconds == pytest.approx(270.0)
    assert leases[1].compile_s == 90.0  # a new command compiles again
    assert leases[0].decides == [("x", "c1"), ("y", "c3")] and leases[1].decides == [("x", "c2")]
    assert [[t.key for t in x.trials] for x in q.split_leases([a, b, c, d], command_s=400.0, margin=1.5)] == [
        ["a", "d"], ["b"], ["c"]]  # a margin of 1.5 leaves no room for b beside a
    with pytest.raises(ValueError, match="margin must be at least 1"):
        q.split_leases([a], margin=0.5)
    with pytest.raises(ValueError, match="command_s must exceed"):
        q.trial_window(30.0)


def test_trials_already_stored_are_left_out_and_stale_ones_run_again(tmp_path):
    exp = Experiment(EXPERIMENTS["gau-length"])
    cfg = config_for(exp.module, "gpu")
    first, second = exp.trials(cfg)[:2]
    for t, code in ((first, exp.code), (second, "0" * 16)):
        save_trial(TrialFile(exp.name, "gpu", t.key, exp.trial_id(cfg, t), t.seed, dict(t.params), {}, provenance(1.0),
                             {"config": "c", "code": code, "data_version": 1}), tmp_path)
    queue = q.build_queue("gpu", "h100", ["gau-length"], tmp_path)
    keys = {t.key: t for t in queue}
    assert first.key not in keys and keys[second.key].refresh and not any(t.refresh for t in queue
                                                                           if t.key != second.key)
    assert len(queue) == len(exp.trials(cfg)) - 1


def test_a_queue_file_round_trips_and_a_foreign_file_is_refused(tmp_path):
    trials = [_trial("x", "a", 1.5, {"m": 2.0}, ["c"])]
    path = q.save_queue(trials, tmp_path / "queue.json", "gpu", "h100", margin=1.3)
    assert q.load_queue(path) == q.QueueFile("gpu", "h100", 1.3, trials)
    path.write_text('{"schema": "other"}')
    with pytest.raises(ValueError, match="is not a lease queue"):
        q.load_queue(path)


def test_the_queue_is_sized_from_the_compiled_h100_steps():
    """No steptimes record exists: the compiled rows of the H100 efficiency record size the campaign, each timed model
    by its own step, with compiling counted apart from the steps."""
    from analysis.compute.plan import gpu_basis, gpu_steps, gpu_steps_basis

    steps = gpu_steps("h100")
    assert steps and all(s.compiled is True and s.source == "efficiency.gpu.h100.json" for s in steps)
    assert "efficiency.gpu.h100.json" in gpu_steps_basis("h100")
    exp = Experiment(EXPERIMENTS["gau-quality"])
    cfg = config_for(exp.module, "gpu")
    trial = next(t for t in exp.trials(cfg) if t.params["task"] == "text")
    seconds, compiles = q.trial_costs(exp, cfg, trial, gpu_basis("h100"))
    assert len(compiles) == 1 and seconds > 0
    (overhead,) = compiles.values()
    model = exp.trial_plan(cfg, trial)[0].model
    assert overhead == pytest.approx(gpu_basis("h100").compile_overhead_s(model.layers))


def test_the_first_lent_command_decides_at_least_fifteen_claims_and_the_second_the_headline():
    """The decisive tier as planned on an H100 today: the first command decides flash-bench's claims and more, at
    least 15, within its window, and runs the headline's first seed at both learning rates; the second decides the
    headline."""
    leases = q.split_leases(q.build_queue("gpu", "h100"))
    first = leases[0]
    assert len(first.decides) >= 15 and first.seconds * q.margin_for("h100") <= q.trial_window()
    assert {c for e, c in first.decides if e == "flash-bench"} == set(
        EXPERIMENTS["flash-bench"].claim_trials(config_for(EXPERIMENTS["flash-bench"], "gpu")))
    seed0 = {f"text.{a}.lr{lr:.4g}.seed0" for a in ("transformer", "flash-quad-post") for lr in (1e-3, 3e-3)}
    assert seed0 <= {t.key for t in first.trials if t.experiment == "gau-quality"}
    headline = [lease.number for lease in leases if ("gau-quality", "flashquad-beats-transformer") in lease.decides]
    assert headline == [2]
    assert q.claim_seeds("gau-quality", "flashquad-beats-transformer") == 3


def test_a_lease_says_what_its_seeded_claims_can_detect():
    """The seeds line names each seeded claim a lease decides and the paired-t resolution of its seeds; claims
    without seeds (closed forms, benchmarks) get none."""
    line = q.seeds_line([("gau-quality", "flashquad-beats-transformer"), ("flash-bench", "quad-batch")])
    assert line is not None and "gau-quality flashquad-beats-transformer over 3 seeds" in line
    assert "flash-bench" not in line and "2.3 (one-sided) or 3.3 (two-sided) per-seed SDs" in line
    assert q.seeds_line([("flash-bench", "quad-batch")]) is None
    assert q.claim_seeds("flash-bench", "quad-batch") == 0


def test_a_trial_without_counted_work_is_sized_as_unknown():
    """A trial whose plan counts no work could take a second or an hour: it is sized as unknown, not as free, until
    this kind of GPU has timed one."""
    from analysis.compute.campaign import UNKNOWN_TRIAL_S
    from analysis.core.experiment import Workload
    from analysis.compute.plan import gpu_basis

    class Uncounted:
        def trial_plan(self, cfg, trial):
            return [Workload("a loop of sampling")]

    class Counted:
        def trial_plan(self, cfg, trial):
            return [Workload("counted", flops=1e12)]

    basis = gpu_basis("h100")
    assert q.trial_costs(Uncounted(), None, None, basis) == (UNKNOWN_TRIAL_S, {})
    seconds, compiles = q.trial_costs(Counted(), None, None, basis)
    assert seconds == pytest.approx(1e12 / basis.model.flops_per_s) and compiles == {}
