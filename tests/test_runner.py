"""The runner: the same trial gives the same bits on every executor; a killed campaign resumes to the same record;
a budget stops a campaign between trials."""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from analysis.compute.campaign import parse_budget, run_campaign
from analysis.core.runner import QueueItem, TrialTask, execute, make_executor, run_queue, seed_everything
from analysis.core.trials import Experiment, TrialFile, save_trial
from analysis.core.registry import EXPERIMENTS, config_for
from analysis.core.results import load_record

ROOT = Path(__file__).resolve().parents[1]


def _campaign(out, *args, timeout=300):
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "-m", "analysis", "campaign", "--scale", "smoke", "--out", str(out), *args],
                          capture_output=True, text=True, timeout=timeout, env=env)


def _data(out, name):
    return load_record(Path(out) / f"{name}.smoke.json").data


@pytest.fixture(scope="module")
def inline_deep_gau(tmp_path_factory):
    out = tmp_path_factory.mktemp("inline")
    done = _campaign(out, "--only", "deep-gau", "--threads", "1")
    assert done.returncode == 0, done.stderr
    return out


@pytest.mark.slow
def test_local_processes_give_the_inline_bits(inline_deep_gau, tmp_path):
    done = _campaign(tmp_path, "--only", "deep-gau", "--executor", "local", "--workers", "2", "--threads", "1")
    assert done.returncode == 0, done.stderr
    assert _data(tmp_path, "deep-gau") == _data(inline_deep_gau, "deep-gau")
    executors = {json.loads(p.read_text())["provenance"]["executor"] for p in tmp_path.glob("trials/*/*.json")}
    assert executors == {"local"}


@pytest.mark.slow
def test_ray_gives_the_inline_bits(inline_deep_gau, tmp_path):
    pytest.importorskip("ray", reason="the ray extra is not installed (pip install -e .[ray])")
    done = _campaign(tmp_path, "--only", "deep-gau", "--executor", "ray", "--workers", "2", "--threads", "1",
                     timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    assert _data(tmp_path, "deep-gau") == _data(inline_deep_gau, "deep-gau")


@pytest.mark.slow
def test_sigkill_loses_only_the_trials_in_flight_and_a_rerun_completes_the_same_record(inline_deep_gau, tmp_path):
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen([sys.executable, "-m", "analysis", "campaign", "--scale", "smoke", "--out", str(tmp_path),
                             "--only", "deep-gau", "--threads", "1"], env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    folder = tmp_path / "trials" / "deep-gau.smoke"
    deadline = time.time() + 120
    while time.time() < deadline and len(list(folder.glob("*.json"))) < 4 and proc.poll() is None:
        time.sleep(0.01)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    stored = list(folder.glob("*.json"))
    total = len(Experiment(EXPERIMENTS["deep-gau"]).trials(EXPERIMENTS["deep-gau"].CONFIGS["smoke"]))
    assert 4 <= len(stored) < total, "the kill came after the campaign had finished: nothing was interrupted"
    assert not (tmp_path / "deep-gau.smoke.json").exists()
    for p in stored:  # every file that exists is whole
        json.loads(p.read_text())
    status = _campaign(tmp_path, "--only", "deep-gau", "--status")
    assert f"deep-gau: {len(stored)} of {total} trials" in status.stdout
    done = _campaign(tmp_path, "--only", "deep-gau", "--threads", "1")
    assert done.returncode == 0, done.stderr
    assert f"ran {total - len(stored)} trials" in done.stdout
    assert _data(tmp_path, "deep-gau") == _data(inline_deep_gau, "deep-gau")


def test_a_budget_starts_no_trial_expected_to_outrun_it(tmp_path):
    """Calibrated on one stored trial that took 10⁶ s, the rest are expected to take far longer than the budget: a budget of
    9 minutes starts none of them, says so, and says what is left."""
    exp = Experiment(EXPERIMENTS["gau-length"])
    cfg = config_for(exp.module, "smoke")
    first = exp.trials(cfg)[0]
    tf = execute(TrialTask(exp.name, "smoke", cfg, first, exp.trial_id(cfg, first), 1))
    save_trial(TrialFile(**{**tf.__dict__, "provenance": {**tf.provenance, "wall_time_s": 1e6}}), tmp_path)
    report, plans = run_campaign("smoke", parse_budget("9m"), ["gau-length"], directory=tmp_path, progress=False)
    assert report.finished == [] and report.stopped == "budget" and len(report.left) == len(exp.trials(cfg)) - 1
    assert plans[0].measured and min(plans[0].estimates.values()) > 100
    out = _campaign(tmp_path, "--only", "gau-length", "--budget", "9m")
    assert out.returncode == 0 and "stopped: the next trials are expected to outrun the budget" in out.stdout
    assert "gau-length: 1 of 16 trials" in out.stdout and "measured here" in out.stdout


def test_run_queue_skips_what_does_not_fit_and_keeps_order(tmp_path):
    exp = Experiment(EXPERIMENTS["gau-length"])
    cfg = config_for(exp.module, "smoke")
    t = exp.trials(cfg)[:3]
    items = [QueueItem(exp, "smoke", cfg, t[0], exp.trial_id(cfg, t[0]), 1.0),
             QueueItem(exp, "smoke", cfg, t[1], exp.trial_id(cfg, t[1]), 1e6),
             QueueItem(exp, "smoke", cfg, t[2], exp.trial_id(cfg, t[2]), 1.0)]
    report = run_queue(items, make_executor("inline"), 1, tmp_path, budget_s=600)
    assert [i.trial.key for i, _ in report.finished] == [t[0].key, t[2].key]
    assert [i.trial.key for i in report.left] == [t[1].key] and report.stopped == "budget"
    assert len(list(tmp_path.glob("trials/*/*.json"))) == 2


class _FailingExecutor:
    """The inline executor, but the trial with key ``bad`` raises, as a broken experiment would on a GPU."""

    name = "inline"
    workers = 1

    def __init__(self, bad):
        self.bad, self.inner = bad, make_executor("inline")

    def submit(self, task):
        if task.trial.key == self.bad:
            from concurrent.futures import Future

            future = Future()
            future.set_exception(RuntimeError("CUDA error: an illegal memory access was encountered"))
            return future
        return self.inner.submit(task)

    def close(self):
        self.inner.close()


@pytest.mark.parametrize("keep_going", [False, True])
def test_a_failed_trial_stops_the_queue_or_only_its_experiment(tmp_path, keep_going, capfd):
    """Without keep_going a failure stops the queue; with it, the failed experiment's other trials are skipped in
    this run and the next experiment's trials run (a broken experiment must not idle the rest of a GPU budget)."""
    items = []
    for name in ("gau-length", "deep-gau"):
        exp = Experiment(EXPERIMENTS[name])
        cfg = config_for(exp.module, "smoke")
        items += [QueueItem(exp, "smoke", cfg, t, exp.trial_id(cfg, t), 1.0) for t in exp.trials(cfg)[:2]]
    bad = items[0].trial.key
    report = run_queue(items, _FailingExecutor(bad), 1, tmp_path, keep_going=keep_going)
    assert [(i.exp.name, i.trial.key) for i, _ in report.failed] == [("gau-length", bad)]
    logged = capfd.readouterr().err  # going on, at once: not in a report that a killed command never prints
    line = f"trial failed: gau-length {bad}: RuntimeError: CUDA error: an illegal memory access"
    assert (line in logged) == keep_going  # stopping, the error itself is the command's one line
    if keep_going:
        assert [i.trial.key for i in report.skipped] == [items[1].trial.key] and report.left == []
        assert [(i.exp.name, i.trial.key) for i, _ in report.finished] == [("deep-gau", i.trial.key)
                                                                          for i in items[2:]]
        assert report.stopped == ""
        from analysis.compute.campaign import report_lines

        lines = report_lines(report, "smoke", ["gau-length"], tmp_path)
        assert f"FAILED: gau-length {bad}: RuntimeError: CUDA error" in lines[1]
        assert lines[2] == "skipped after that failure: 1 more trial(s) of gau-length (the other experiments went on)"
    else:
        assert report.finished == [] and report.skipped == [] and report.left == items[1:]
        assert report.stopped == "failure"


def test_inputs_are_checked():
    with pytest.raises(ValueError, match="budget must be"):
        parse_budget("soon")
    assert parse_budget("9m") == 540 and parse_budget("1.5h") == 5400 and parse_budget("90") == 90
    with pytest.raises(ValueError, match="executor must be one of"):
        make_executor("cluster")
    with pytest.raises(ValueError, match="workers must be 1"):
        make_executor("inline", 2)
    with pytest.raises(ValueError, match="seed must be"):
        seed_everything(-1)


def test_cli_refuses_bad_campaigns_with_one_line(tmp_path, capsys):
    from analysis.cli.main import main

    for args, message in ((["--budget", "soon"], "budget must be"), (["--only", "nope"], "experiment must be one of"),
                          (["--workers", "2"], "--executor inline runs one trial at a time"),
                          (["--address", "x:1"], "--address applies only to --executor ray"),
                          (["--trials"], "--trials applies only to --status"),
                          (["--per-gpu", "4"], "--per-gpu applies only to --executor local"),
                          (["--deadline", "1"], "--deadline must be in the future"),
                          (["--deadline", "9e12", "--budget", "9m"], "two ways to say one thing"),
                          (["--queue", "q.json", "--only", "deep-gau"], "--queue runs its own trials"),
                          (["--queue", str(tmp_path / "none.json")], "is not a lease queue")):
        status = main(["campaign", "--scale", "smoke", "--out", str(tmp_path), *args])
        err = capsys.readouterr().err
        assert status == 2 and message in err and len(err.strip().splitlines()) == 1, err


def test_gpu_slots_share_each_gpu_round_robin():
    from analysis.core.runner import gpu_slots

    assert gpu_slots(1, 1) == [0]
    assert gpu_slots(4, 1, per_gpu=4) == [0, 0, 0, 0]
    assert gpu_slots(5, 2, per_gpu=3) == [0, 1, 0, 1, 0]
    for args, message in (((3, 1, 2), "workers must be in \\[1, 2\\]"), ((1, 0, 1), "gpus must be"),
                          ((1, 1, 0), "per_gpu must be"), ((0, 2, 1), "workers must be in")):
        with pytest.raises(ValueError, match=message):
            gpu_slots(*args)
    with pytest.raises(ValueError, match="per_gpu applies only to the local executor"):
        make_executor("inline", per_gpu=2)


def test_status_lists_each_missing_trial_with_its_expected_time(tmp_path):
    from analysis.compute.campaign import campaign_plans, status_lines

    plans = campaign_plans("smoke", ["deep-gau"], tmp_path, estimate_on="cuda")
    lines = status_lines(plans, "smoke", "cuda", trials=True)
    missing = plans[0].status.missing
    assert len(missing) > 1 and len(lines) == 3 + len(missing)
    assert "from H100 step times" in lines[1]
    assert [line.split(":")[0].strip() for line in lines[2:-1]] == [t.key for t in missing]


def test_gpu_status_totals_the_first_tier_in_lent_sessions(tmp_path):
    from analysis.compute.campaign import FIRST_TIER_PRIORITY, GPU_LEASE_S, campaign_plans, lease_count, status_lines

    plans = campaign_plans("gpu", ["deep-gau", "ffn-basics"], tmp_path, estimate_on="cuda")
    assert [p.first_tier for p in plans] == [True, False]  # deep-gau has PRIORITY 30, ffn-basics the default 50
    lines = status_lines(plans, "gpu", "cuda")
    first = plans[0].missing_s
    total = first + plans[1].missing_s
    assert lines[-2] == (f"  first tier (priority below {FIRST_TIER_PRIORITY}): {len(plans[0].status.missing)} trials, "
                         f"about {first / 60:.1f} min, {first / GPU_LEASE_S:.1f} lent sessions of one 9-minute "
                         f"command; everything: {total / GPU_LEASE_S:.1f}")
    # deep-gau's gpu runs (300 steps) train compiled; no H100 has timed a compile, so the estimates say they omit it
    from analysis.compute.plan import gpu_basis, run_compiles

    assert gpu_basis("h100").compile_fit is None and run_compiles(300)
    compiled = [t for t in plans[0].status.missing
                if any(w.model is not None and run_compiles(w.steps) for w in plans[0].exp.trial_plan(plans[0].cfg, t))]
    assert len(compiled) == len(plans[0].status.missing)
    assert lines[-1].startswith(f"  compiling not yet timed on this kind of GPU: {len(compiled)} of the trials left "
                                "train compiled (runs of 300 steps or more)")
    assert lease_count(GPU_LEASE_S * 2.5) == 2.5
    with pytest.raises(ValueError, match="seconds must be finite"):
        lease_count(float("nan"))
    assert not any("first tier" in line for line in status_lines(plans[1:], "gpu", "cuda"))


def test_a_live_run_reads_back_the_trials_todays_code_made_in_its_cache(tmp_path, monkeypatch):
    """The live-run cache: the first run stores every trial, the second reads them all back (running none) with the
    same data and seconds; a trial stored by other code is run again and overwritten."""
    import analysis.core.runner as runner
    from analysis.core.trials import load_trial, stored_trials

    exp = Experiment(EXPERIMENTS["gau-init"])
    cfg = config_for(exp.module, "smoke")
    first, seconds = runner.run_in_process(exp, "smoke", cfg, threads=1, cache=tmp_path)
    files = sorted(tmp_path.glob("trials/gau-init.smoke/*.json"))
    assert len(files) == len(exp.trials(cfg)) and seconds > 0

    def refuse(task):
        raise AssertionError(f"ran {task.trial.key} although today's code had stored it")

    monkeypatch.setattr(runner, "execute", refuse)
    again, seconds_again = runner.run_in_process(exp, "smoke", cfg, threads=1, cache=tmp_path)
    assert again == first and seconds_again == pytest.approx(seconds)

    older = load_trial(files[0])
    doc = json.loads(files[0].read_text())
    doc["fingerprint"]["code"] = "older code"
    files[0].write_text(json.dumps(doc))
    ran: list[str] = []
    monkeypatch.setattr(runner, "execute", lambda task: ran.append(task.trial.key) or execute(task))
    assert runner.run_in_process(exp, "smoke", cfg, threads=1, cache=tmp_path)[0] == first
    assert ran == [older.key]  # only the trial made by other code ran again
    assert stored_trials("gau-init", "smoke", tmp_path)[older.id].fingerprint["code"] == exp.code
    files[1].write_text("{ torn")
    monkeypatch.setattr(runner, "execute", lambda task: ran.append(task.trial.key) or execute(task))
    assert runner.run_in_process(exp, "smoke", cfg, threads=1, cache=tmp_path)[0] == first
    assert len(ran) == 2  # and a torn file is run again


def test_a_ninth_model_in_one_process_still_compiles():
    """Every model shares LanguageModel.forward: with dynamo's default limit of 8 versions, the ninth distinct model
    of a process runs eagerly and only a warning says so; a campaign process raises the limit, so ten compile, and
    the census counts each; a logit scale is not compiled once per value."""
    import torch._dynamo

    from analysis.core.runner import allow_recompiles, compile_census
    from analysis.models.lm import LanguageModel, ModelConfig

    x = torch.randint(0, 256, (2, 16))

    def compile_models(widths, alphas=(1.0,)):
        with compile_census() as census:
            for d in widths:
                for alpha in alphas:
                    model = LanguageModel(ModelConfig(d=d, layers=1, block="transformer", heads=2, ctx=16,
                                                      attn_alpha=alpha))
                    torch.compile(model, backend="eager")(x).sum().backward()
        return census

    torch._dynamo.reset()
    config = torch._dynamo.config
    name = "recompile_limit" if hasattr(config, "recompile_limit") else "cache_size_limit"
    before = getattr(config, name)
    try:
        setattr(config, name, 8)
        census = compile_models(range(32, 112, 8))  # ten widths
        assert census.compiled == 8 and census.fell_back >= 1  # dynamo's default: the ninth fell back
        torch._dynamo.reset()
        allow_recompiles()
        census = compile_models(range(32, 112, 8))
        assert census.compiled == 10 and census.fell_back == 0
        torch._dynamo.reset()
        census = compile_models([32], alphas=(0.5, 1.0, 2.0, 4.0, 8.0))
        assert census.compiled <= 2 and census.fell_back == 0  # after the first change, a float it reads is symbolic
    finally:
        setattr(config, name, before)
        torch._dynamo.reset()


def test_a_trials_provenance_counts_its_compiled_frames(tmp_path):
    from analysis.core.runner import TrialTask, execute
    from analysis.core.trials import Experiment
    from analysis.core.registry import EXPERIMENTS

    exp = Experiment(EXPERIMENTS["entropy-bound"])
    cfg = exp.module.CONFIGS["smoke"]
    (trial,) = exp.trials(cfg)
    tf = execute(TrialTask(exp.name, "smoke", cfg, trial, exp.trial_id(cfg, trial), 1))
    assert tf.provenance["compiled_frames"] == 0 and tf.provenance["eager_fallback_frames"] == 0


def test_a_cuda_trial_records_the_memory_it_found_held_and_hands_its_own_back(monkeypatch):
    """On CUDA a trial's provenance gives the device memory an earlier trial left allocated and its own peak, and
    the allocator's cache is emptied after it, so that a leak shows in the record and one trial cannot starve the next."""
    import torch

    from analysis.core import runner

    calls = []
    monkeypatch.setattr(runner, "pick_device", lambda: torch.device("cuda"))
    monkeypatch.setattr(torch.cuda, "reset_peak_memory_stats", lambda device=None: calls.append("reset"))
    monkeypatch.setattr(torch.cuda, "memory_allocated", lambda device=None: 3 << 30)
    monkeypatch.setattr(torch.cuda, "max_memory_allocated", lambda device=None: 7 << 30)
    monkeypatch.setattr(torch.cuda, "synchronize", lambda device=None: None)
    monkeypatch.setattr(torch.cuda, "empty_cache", lambda: calls.append("empty"))
    exp = Experiment(EXPERIMENTS["entropy-bound"])  # a trial of closed forms, which ignores the device
    cfg = config_for(exp.module, "smoke")
    trial = exp.trials(cfg)[0]
    tf = execute(TrialTask(exp.name, "smoke", cfg, trial, exp.trial_id(cfg, trial), 1))
    assert tf.provenance["device_bytes_held_at_start"] == 3 << 30 and tf.provenance["peak_device_bytes"] == 7 << 30
    assert calls == ["reset", "empty"]
