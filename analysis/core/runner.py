"""The one runner of trials: device, seeding, threads, progress, and the executors that run trials side by side.

Every trial runs through :func:`execute`, whichever executor calls it: it sets the thread count, picks the device,
seeds ``random``, numpy and torch with the trial's seed, runs the trial, and returns its plain data with the
provenance of where it ran. So a trial gives the same result bit for bit whichever executor runs it, on the same
device type with the same thread count (``tests/test_runner.py``).

Executors (:func:`make_executor`):

* ``inline``: in this process, one trial after another;
* ``local``: worker processes (spawned) on this machine; with CUDA, one process per GPU, each seeing only its own;
* ``ray``: tasks on a Ray cluster (``pip install -e .[ray]``), started by ``ray.init()`` on this machine or joined
  with ``address``.

:func:`run_queue` feeds trials to an executor in order and writes each finished trial's file at once, from this
process, atomically; a kill loses only the trials in flight. With a deadline it starts no trial that it expects not
to finish in time, and SIGINT or SIGTERM make it stop between trials.
"""

from __future__ import annotations

import gc
import math
import multiprocessing
import os
import random
import signal
import sys
import threading
import time
import warnings
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np
import torch

from analysis.core.experiment import config_for
from analysis.core.registry import fingerprint, get_experiment
from analysis.core.results import Record, ResultsFileError, from_jsonable, provenance, record_path, to_jsonable
from analysis.core.size import validate_size
from analysis.core.trials import Experiment, Trial, TrialFile, assemble_record, load_trial, save_trial, trial_path
from analysis.tasks.data import prepare_corpus

EXECUTORS = ("inline", "local", "ray")
# dynamo keeps at most 8 compiled versions of one function by default, and every model shares LanguageModel.forward:
# the ninth distinct model of a campaign process would train eagerly, with only a logged warning
RECOMPILE_LIMIT = 256


def pick_device() -> torch.device:
    """CUDA when available, else the CPU: the device every trial runs on."""
    return torch.device("cuda" if torch.cuda.is_available() else "cpu")


def seed_everything(seed: int) -> None:
    """Seed Python's ``random``, numpy's global generator and torch (CPU and CUDA) with ``seed``."""
    if not isinstance(seed, int) or seed < 0:
        raise ValueError(f"seed must be an integer >= 0; got {seed!r}")
    random.seed(seed)
    np.random.seed(seed % 2**32)
    torch.manual_seed(seed)


def cpu_cores() -> int:
    """The CPU cores this process may use."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


def default_threads(workers: int) -> int:
    """Threads per trial: the cores shared out among the workers, at least one."""
    if workers < 1:
        raise ValueError(f"workers must be at least 1; got {workers}")
    return max(1, cpu_cores() // workers)


@dataclass(frozen=True)
class TrialTask:
    """What a worker needs to run one trial: the experiment's name and config, the trial, its threads."""

    experiment: str
    scale: str
    config: Any
    trial: Trial
    trial_id: str
    threads: int
    executor: str = "inline"


@contextmanager
def _threads(n: int) -> Iterator[None]:
    before = torch.get_num_threads()
    torch.set_num_threads(n)
    try:
        yield
    finally:
        torch.set_num_threads(before)


def allow_recompiles(limit: int = RECOMPILE_LIMIT) -> None:
    """Let dynamo keep ``limit`` compiled versions of a function (at least its own default), so that no model of a
    campaign process trains eagerly for having come after eight others."""
    import torch._dynamo

    config = torch._dynamo.config
    name = "recompile_limit" if hasattr(config, "recompile_limit") else "cache_size_limit"  # torch < 2.6
    setattr(config, name, max(int(getattr(config, name)), limit))


@dataclass
class CompileCensus:
    """Frames dynamo compiled, and frames it tried and left eager (a recompile limit, an error), while it was open."""

    compiled: int = 0
    fell_back: int = 0


@contextmanager
def compile_census() -> Iterator[CompileCensus]:
    """Count, into the yielded :class:`CompileCensus`, the frames dynamo compiled and those it left eager within."""
    from torch._dynamo.utils import counters

    census = CompileCensus()
    total, ok = counters["frames"]["total"], counters["frames"]["ok"]
    try:
        yield census
    finally:
        census.compiled = counters["frames"]["ok"] - ok
        census.fell_back = counters["frames"]["total"] - total - census.compiled


def failure_line(item: QueueItem, err: BaseException) -> str:
    """One line on a failed trial for the log: experiment, key, the error's type and the start of its message."""
    message = " ".join(str(err).split())[:300]
    return f"trial failed: {item.exp.name} {item.trial.key}: {type(err).__name__}: {message}"


@contextmanager
def device_memory_released(device: torch.device) -> Iterator[None]:
    """Hand a trial's device memory back when it ends, failed or not: what a cycle holds is collected, then the
    allocator's cache emptied, so that one trial's memory cannot starve the next in the same process."""
    try:
        yield
    finally:
        if device.type == "cuda":
            gc.collect()
            torch.cuda.empty_cache()


@contextmanager
def compile_out_of_memory_fails() -> Iterator[None]:
    """Turn training's "torch.compile failed (... out of memory ...); training eagerly" warning into an error: eager
    training would run out of memory too, or crawl through the rest of a lent command."""
    with warnings.catch_warnings():
        warnings.filterwarnings("error", message=r"torch\.compile failed .*out of memory")
        yield


def execute(task: TrialTask) -> TrialFile:
    """Run one trial as every executor does: threads, device, seed, then the experiment's ``run_trial``; its
    provenance counts the frames compiled and those left eager and, on CUDA, the device memory it found held and its
    peak."""

    exp = Experiment(get_experiment(task.experiment))
    prepare_corpus(task.config)  # the pinned-sources corpus is built on first use, its hash checked
    allow_recompiles()
    device = pick_device()
    with _threads(task.threads), compile_census() as census, device_memory_released(device), \
            compile_out_of_memory_fails():
        memory: dict[str, int] = {}
        if device.type == "cuda":  # what an earlier trial left allocated shows as held here
            torch.cuda.reset_peak_memory_stats(device)
            memory["device_bytes_held_at_start"] = torch.cuda.memory_allocated(device)
        seed_everything(task.trial.seed)
        start = time.perf_counter()
        result = to_jsonable(exp.run_trial(task.config, task.trial, device))
        if device.type == "cuda":
            torch.cuda.synchronize()
            memory["peak_device_bytes"] = torch.cuda.max_memory_allocated(device)
        wall = time.perf_counter() - start
    if census.fell_back:
        print(f"{task.experiment} {task.trial.key}: {census.fell_back} frame(s) that dynamo tried to compile ran "
              "eagerly", file=sys.stderr, flush=True)
    prov = {**provenance(wall), "threads": task.threads, "executor": task.executor, "device_type": device.type,
            "compiled_frames": census.compiled, "eager_fallback_frames": census.fell_back, **memory}
    return TrialFile(task.experiment, task.scale, task.trial.key, task.trial_id, task.trial.seed,
                     to_jsonable(dict(task.trial.params)), result, prov, fingerprint(exp.module, task.config))


def run_in_process(exp: Experiment, size: str, cfg: Any, threads: int | None = None,
                   cache: str | os.PathLike[str] | None = None) -> tuple[dict[str, Any], float]:
    """Every trial of ``cfg`` run here, one after another, and assembled (a chapter's live run), with the seconds its
    trials ran. Nothing is stored, except in ``cache``: a folder of trial files from which a trial made by today's
    code under the same config is taken instead of run again, and into which each trial run here is written."""
    results, device, seconds = [], "cpu", 0.0
    for trial in exp.trials(cfg):
        task = TrialTask(exp.name, size, cfg, trial, exp.trial_id(cfg, trial), threads or default_threads(1))
        tf = _cached(task, exp.code, cache) if cache is not None else None
        if tf is None:
            tf = execute(task)
            if cache is not None:
                save_trial(tf, cache)
        results.append(from_jsonable(tf.result))
        device = str(tf.provenance["device_type"])
        seconds += tf.wall_time_s
    return exp.assemble(cfg, results, device), seconds


def _cached(task: TrialTask, code: str, cache: str | os.PathLike[str]) -> TrialFile | None:
    """The trial file of ``task`` in ``cache`` when today's code made it; else None."""

    probe = TrialFile(task.experiment, task.scale, task.trial.key, task.trial_id, task.trial.seed, {}, {}, {}, {})
    path = trial_path(probe, cache)
    if not path.is_file():
        return None
    try:
        tf = load_trial(path)
    except ResultsFileError:
        return None  # a torn or foreign file is run again and overwritten
    return tf if tf.fingerprint.get("code") == code else None


class Executor(Protocol):
    """Runs trial tasks and hands back futures of their trial files."""

    name: str
    workers: int

    def submit(self, task: TrialTask) -> Future[TrialFile]: ...

    def close(self) -> None: ...


class InlineExecutor:
    """Runs each trial in this process when it is submitted."""

    name = "inline"

    def __init__(self) -> None:
        self.workers = 1

    def submit(self, task: TrialTask) -> Future[TrialFile]:
        """Run ``task`` now; the future holds its file or its exception."""
        future: Future[TrialFile] = Future()
        try:
            future.set_result(execute(task))
        except BaseException as err:  # noqa: BLE001 - handed to the caller through the future
            if isinstance(err, KeyboardInterrupt):
                raise
            future.set_exception(err)
        return future

    def close(self) -> None:
        """Nothing to release."""


_GPU_SLOTS: Any = None


def _init_local_worker(slots: Any) -> None:
    """A spawned worker: with GPUs, take one index from the queue and see only that GPU."""
    if slots is not None:
        os.environ["CUDA_VISIBLE_DEVICES"] = str(slots.get())
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent decides when to stop


def gpu_slots(workers: int, gpus: int, per_gpu: int = 1) -> list[int]:
    """The GPU index each of ``workers`` processes sees: round robin over ``gpus``, at most ``per_gpu`` a GPU."""
    if gpus < 1:
        raise ValueError(f"gpus must be at least 1; got {gpus}")
    if per_gpu < 1:
        raise ValueError(f"per_gpu must be at least 1; got {per_gpu}")
    if not 1 <= workers <= gpus * per_gpu:
        raise ValueError(f"workers must be in [1, {gpus * per_gpu}] ({gpus} GPU(s) x {per_gpu} per GPU); got {workers}")
    return [i % gpus for i in range(workers)]


class LocalExecutor:
    """Worker processes on this machine (spawned): CPU workers, or ``per_gpu`` processes per GPU (small models leave
    a GPU idle between kernel launches; processes sharing it fill those gaps)."""

    name = "local"

    def __init__(self, workers: int | None = None, per_gpu: int = 1) -> None:
        gpus = torch.cuda.device_count() if torch.cuda.is_available() else 0
        if per_gpu < 1:
            raise ValueError(f"per_gpu must be at least 1; got {per_gpu}")
        self.workers = workers if workers is not None else (gpus * per_gpu or max(1, cpu_cores()))
        if self.workers < 1:
            raise ValueError(f"workers must be at least 1; got {self.workers}")
        ctx = multiprocessing.get_context("spawn")
        slots = None
        if gpus:
            slots = ctx.Queue()
            for i in gpu_slots(self.workers, gpus, per_gpu):
                slots.put(i)
        self._pool = ProcessPoolExecutor(self.workers, mp_context=ctx, initializer=_init_local_worker,
                                         initargs=(slots,))

    def submit(self, task: TrialTask) -> Future[TrialFile]:
        """Queue ``task`` on a worker process."""
        return self._pool.submit(execute, task)

    def close(self) -> None:
        """Stop the workers (after the trials they run)."""
        self._pool.shutdown(wait=True, cancel_futures=True)


class RayExecutor:
    """Ray tasks: on a cluster started here by ``ray.init()``, or an existing one at ``address``."""

    name = "ray"

    def __init__(self, workers: int | None = None, address: str | None = None, threads: int = 1) -> None:
        try:
            import ray
        except ImportError:
            raise ValueError("the ray executor needs Ray: pip install -e .[ray]") from None
        self._ray = ray
        if not ray.is_initialized():
            kwargs: dict[str, Any] = {"include_dashboard": False, "log_to_driver": False,
                                      "configure_logging": False}
            if address:
                ray.init(address=address, **kwargs)
            else:  # Ray nices its workers by 15: a trial would then yield its cores to any other work, and its
                # measured times with it; trials run at the priority the other executors give them
                ray.init(num_cpus=workers * threads if workers else cpu_cores(), _system_config={"worker_niceness": 0},
                         **kwargs)
        gpus = int(ray.cluster_resources().get("GPU", 0))
        cpus = int(ray.cluster_resources().get("CPU", 1))
        self.workers = workers or (gpus or max(1, cpus // threads))
        self._remote = ray.remote(execute).options(num_cpus=threads, num_gpus=1 if gpus else 0, max_retries=0)

    def submit(self, task: TrialTask) -> Future[TrialFile]:
        """Queue ``task`` as a Ray task."""
        return self._remote.remote(task).future()

    def close(self) -> None:
        """Leave the cluster (a cluster started here stops)."""
        self._ray.shutdown()


def make_executor(name: str, workers: int | None = None, address: str | None = None, threads: int = 1,
                  per_gpu: int = 1) -> Executor:
    """An executor by name: inline, local or ray."""
    if name not in EXECUTORS:
        raise ValueError(f"executor must be one of {', '.join(EXECUTORS)}; got {name!r}")
    if workers is not None and workers < 1:
        raise ValueError(f"workers must be at least 1; got {workers}")
    if address and name != "ray":
        raise ValueError("address applies only to the ray executor")
    if per_gpu != 1 and name != "local":
        raise ValueError("per_gpu applies only to the local executor")
    if name == "inline":
        if workers not in (None, 1):
            raise ValueError("the inline executor runs one trial at a time: workers must be 1")
        return InlineExecutor()
    if name == "local":
        return LocalExecutor(workers, per_gpu)
    return RayExecutor(workers, address, threads)


@dataclass(frozen=True)
class QueueItem:
    """A trial to run, with its experiment, scale, config and expected seconds."""

    exp: Experiment
    scale: str
    config: Any
    trial: Trial
    trial_id: str
    estimate_s: float = 0.0  # without compiling the models in ``compiles``
    compiles: tuple[tuple[str, float], ...] = ()  # (model, seconds): compiling a model this process has not yet

    def expected_s(self, compiled: set[str]) -> float:
        """Expected seconds in a process that has compiled the models in ``compiled``."""
        return self.estimate_s + sum(s for m, s in self.compiles if m not in compiled)


@dataclass
class QueueReport:
    """What a queue run did: trials finished (with their files), left (not started) and failed."""

    finished: list[tuple[QueueItem, TrialFile]] = field(default_factory=list)
    left: list[QueueItem] = field(default_factory=list)
    failed: list[tuple[QueueItem, BaseException]] = field(default_factory=list)
    skipped: list[QueueItem] = field(default_factory=list)  # with keep_going: the failed experiments' other trials
    stopped: str = ""  # why it stopped early: "budget", "signal", "failure"; "" when it ran everything
    wall_time_s: float = 0.0


class _StopFlag:
    """Set by SIGINT or SIGTERM while a queue runs (main thread only): start no more trials."""

    def __init__(self) -> None:
        self.reason = ""

    @contextmanager
    def installed(self) -> Iterator[None]:
        if threading.current_thread() is not threading.main_thread():
            yield
            return
        previous = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}

        def handler(signum: int, frame: Any) -> None:
            self.reason = "signal"
            print(f"received {signal.Signals(signum).name}: finishing the trials in flight, starting no more",
                  file=sys.stderr, flush=True)

        for s in previous:
            signal.signal(s, handler)
        try:
            yield
        finally:
            for s, h in previous.items():
                signal.signal(s, h)


def run_trials(items: Sequence[QueueItem], executor: str = "inline", workers: int | None = None,
               threads: int | None = None, address: str | None = None,
               directory: str | os.PathLike[str] | None = None, budget_s: float | None = None,
               on_finish: Callable[[QueueItem, TrialFile, int, int], None] | None = None,
               per_gpu: int = 1, keep_going: bool = False, margin: float = 1.0) -> QueueReport:
    """:func:`run_queue` on an executor made by name here and closed when the queue ends; ``threads`` per trial
    defaults to the cores shared out among the executor's workers."""
    pool = make_executor(executor, workers, address, threads or default_threads(workers or 1), per_gpu)
    try:
        return run_queue(items, pool, threads or default_threads(pool.workers), directory, budget_s, on_finish,
                         keep_going, margin)
    finally:
        pool.close()


def run_queue(items: Sequence[QueueItem], executor: Executor, threads: int,
              directory: str | os.PathLike[str] | None = None, budget_s: float | None = None,
              on_finish: Callable[[QueueItem, TrialFile, int, int], None] | None = None,
              keep_going: bool = False, margin: float = 1.0) -> QueueReport:
    """Run ``items`` in order on ``executor``, saving each finished trial's file at once (then ``on_finish``).

    With ``budget_s``, the first item (in order) is started whose expected seconds (:meth:`QueueItem.expected_s`:
    its compiling only for a model this queue has not compiled yet) times ``margin`` still fit: ``elapsed + margin x
    expected <= budget_s``; the rest are left.
    A failed trial is reported. Without ``keep_going`` it stops the queue after the trials in flight (their files are
    saved); with it, the failed trial's experiment starts no more trials in this run (they are ``skipped``) and the
    other experiments' trials go on, so that one broken experiment does not idle the rest of a budget.
    """
    if budget_s is not None and not (budget_s > 0 and math.isfinite(budget_s)):
        raise ValueError(f"budget_s must be positive and finite; got {budget_s!r}")
    if not (margin >= 1 and math.isfinite(margin)):
        raise ValueError(f"margin must be finite and at least 1; got {margin!r}")
    compiled: set[str] = set()
    report = QueueReport()
    pending = list(items)
    inflight: dict[Future[TrialFile], QueueItem] = {}
    stop = _StopFlag()
    start = time.perf_counter()
    total = len(pending)
    with stop.installed():
        while pending or inflight:
            while pending and len(inflight) < executor.workers and not stop.reason and (keep_going
                                                                                         or not report.failed):
                elapsed = time.perf_counter() - start
                fits = [i for i in pending
                        if budget_s is None or elapsed + margin * i.expected_s(compiled) <= budget_s]
                if not fits:
                    stop.reason = stop.reason or "budget"
                    break
                item = fits[0]
                pending.remove(item)
                compiled.update(m for m, _ in item.compiles)
                task = TrialTask(item.exp.name, item.scale, item.config, item.trial, item.trial_id, threads,
                                 executor.name)
                inflight[executor.submit(task)] = item
            if not inflight:
                break
            done, _ = wait(list(inflight), return_when=FIRST_COMPLETED)
            for future in done:
                item = inflight.pop(future)
                try:
                    tf = future.result()
                except Exception as err:  # noqa: BLE001 - reported; the queue stops, or skips the experiment
                    report.failed.append((item, err))
                    if keep_going:  # the queue goes on: logged now, so that a run killed later still says why
                        print(failure_line(item, err), file=sys.stderr, flush=True)
                        same = [i for i in pending if i.exp.name == item.exp.name]
                        report.skipped.extend(same)
                        pending = [i for i in pending if i.exp.name != item.exp.name]
                    continue
                save_trial(tf, directory)
                report.finished.append((item, tf))
                if on_finish is not None:
                    on_finish(item, tf, len(report.finished), total)
    report.left = pending
    report.stopped = "failure" if report.failed and not keep_going else stop.reason if pending else ""
    report.wall_time_s = time.perf_counter() - start
    return report


def run_experiment(name: str, cfg: Any, size: str = "smoke") -> dict[str, Any]:
    """The data of experiment ``name`` under ``cfg``: every trial run in this process, assembled, nothing stored."""
    return run_in_process(Experiment(get_experiment(name)), validate_size(size), cfg)[0]


def run_and_record(name: str, size: str, directory: str | None = None, progress: bool = True,
                   executor: str = "inline", workers: int | None = None, **overrides: Any) -> tuple[Record, str]:
    """Run every trial of experiment ``name`` at ``size`` (all of them, stored or not), store each, and save the
    record assembled from them; returns (record, path)."""
    exp = Experiment(get_experiment(name))
    cfg = config_for(exp.module, validate_size(size), **overrides)
    items = [QueueItem(exp, size, cfg, t, exp.trial_id(cfg, t)) for t in exp.trials(cfg)]

    def on_finish(item: QueueItem, tf: Any, k: int, n: int) -> None:
        if progress:
            print(f"{name}: {k}/{n} trials done ({item.trial.key}, {tf.wall_time_s:.1f} s)", flush=True)

    report = run_trials(items, executor, workers, directory=directory, on_finish=on_finish)
    if report.failed:
        raise report.failed[0][1]  # the trial's own error (a bad corpus file is the user's, and says so)
    if report.left:
        raise RuntimeError(f"{name}: stopped with {len(report.left)} trials left; run again to continue")
    record, _ = assemble_record(exp, size, cfg, directory)
    assert record is not None

    return record, str(record_path(name, size, directory))
