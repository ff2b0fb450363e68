"""A lease rehearsed on this CPU: prepared, run at smoke scale under a limit, killed with SIGKILL at a chosen or random
moment, and taken in elsewhere, to show that every trial it had finished came back.

A trial counts as finished once the archive that holds it is in the lease's out folder: the campaign repacks right
after it stores each trial's file, so a kill can fall only between those two, and then only that newest trial is
missing from the archive (it ran, but its packing did not end). The rehearsal says so when it happens, and fails on
any other trial missing or any file that differs.
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from analysis.compute import lease
from analysis.compute.queue import build_queue, save_queue
from analysis.core.results import REPO_ROOT

REHEARSAL_EXPERIMENTS = ("gau-quality", "gau-length")  # many trials of a second or less at smoke scale
REHEARSAL_LIMIT_S = 300.0  # the limit the rehearsed command is given: the kill comes long before it
START_WAIT_S = 120.0  # how long the lease may take to write its first summary before the clock starts anyway


@dataclass
class Rehearsal:
    """What one rehearsal saw: when it killed, the trial files the device held then, those taken in here."""

    kill_after_s: float
    ended_alone: bool = False  # the run ended before the kill came
    stored: dict[str, bytes] = field(default_factory=dict)  # trial files on the device at the kill, by path
    newest: str | None = None  # the one stored last
    taken: dict[str, bytes] = field(default_factory=dict)  # files the archives brought back, by path
    archives: list[str] = field(default_factory=list)
    summary_ok: bool = False
    refused: str = ""  # why unpack refused an archive, if it did

    @property
    def missing(self) -> list[str]:
        """Trial files on the device that did not come back."""
        return sorted(p for p in self.stored if p not in self.taken)

    @property
    def lost(self) -> list[str]:
        """Finished trials that did not come back: every missing one but the newest, whose packing the kill may
        have cut."""
        return [p for p in self.missing if p != self.newest]

    @property
    def differing(self) -> list[str]:
        """Files brought back whose bytes differ from the device's."""
        return sorted(p for p, data in self.taken.items() if p in self.stored and self.stored[p] != data)

    @property
    def ok(self) -> bool:
        """Nothing finished was lost, nothing came back changed, the summary and the archives were readable."""
        return not self.lost and not self.differing and self.summary_ok and not self.refused

    def lines(self) -> list[str]:
        """What a reader needs: the kill, the counts, and any loss."""
        when = "ended by itself before" if self.ended_alone else "killed after"
        out = [f"{when} {self.kill_after_s:.1f} s: {len(self.stored)} trial files on the device, "
               f"{sum(p in self.stored for p in self.taken)} of them back from {len(self.archives)} archive(s)"]
        if self.newest in self.missing:
            out.append(f"the newest, {self.newest}, was stored but its packing was cut by the kill: in flight")
        out += [f"LOST: {p}" for p in self.lost] + [f"DIFFERS: {p}" for p in self.differing]
        if self.refused:
            out.append(f"an archive was refused: {self.refused}")
        if not self.summary_ok:
            out.append("the summary in the out folder was not readable JSON")
        out.append("every finished trial came back" if self.ok else "the rehearsal FAILED")
        return out


def _trial_files(root: Path) -> dict[str, bytes]:
    folder = root / "trials"
    if not folder.is_dir():
        return {}
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*.json"))}


def rehearse(kill_after_s: float | None = None, only: Sequence[str] = REHEARSAL_EXPERIMENTS,
             workdir: str | os.PathLike[str] | None = None, seed: int | None = None,
             window_s: tuple[float, float] = (4.0, 20.0)) -> Rehearsal:
    """Prepare a smoke-scale queue of ``only`` in a lease folder of its own, run ``lease run`` on it as a child
    process group with an empty results folder, SIGKILL it ``kill_after_s`` seconds after it has written its first
    summary (default: a moment drawn from ``window_s`` with ``seed``), then unpack its archives into another folder
    and compare."""
    import json


    if kill_after_s is None:
        kill_after_s = random.Random(seed).uniform(*window_s)
    if not (kill_after_s > 0):
        raise ValueError(f"kill_after_s must be positive; got {kill_after_s!r}")
    base = Path(workdir) if workdir is not None else Path(tempfile.mkdtemp(prefix="lease-rehearsal-"))
    device, here, out, carried = base / "device-results", base / "here-results", base / "out", base / "lease"
    for folder in (device, here, out, carried):
        folder.mkdir(parents=True, exist_ok=True)
    save_queue(build_queue("smoke", "h100", only, device), carried / lease.QUEUE, "smoke", "h100")
    env = {**os.environ, "ANALYSIS_RESULTS_DIR": str(device), "PYTHONUNBUFFERED": "1"}
    argv = [sys.executable, "-m", "analysis", "lease", "run", "--scale", "smoke", "--limit", f"{REHEARSAL_LIMIT_S}s",
            "--out", str(out), "--lease-dir", str(carried)]
    with open(base / "lease.log", "wb") as log:
        proc = subprocess.Popen(argv, env=env, cwd=REPO_ROOT, stdout=log, stderr=subprocess.STDOUT,
                                start_new_session=True)
        # the moment counts from the lease's first summary: before it, the interpreter is still starting and holds
        # nothing to lose, and on a loaded machine that start alone can outlast the whole window
        started = time.monotonic()
        while not (out / lease.SUMMARY).exists() and proc.poll() is None and time.monotonic() - started < START_WAIT_S:
            time.sleep(0.05)
        try:
            proc.wait(timeout=kill_after_s)
            ended = True
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)  # the lease and its campaign child, at once
            proc.wait()
            ended = False
    result = Rehearsal(kill_after_s, ended)
    result.stored = _trial_files(device)
    if result.stored:
        result.newest = max(result.stored, key=lambda p: (device / p).stat().st_mtime_ns)
    archives = sorted(p for p in out.glob("lease-results*.tar.gz"))
    result.archives = [p.name for p in archives]
    if archives:
        try:
            lease.unpack(archives, here)
        except lease.LeaseError as err:
            result.refused = str(err)
    result.taken = _trial_files(here)
    try:
        json.loads((out / lease.SUMMARY).read_text())
        result.summary_ok = True
    except (OSError, ValueError):
        result.summary_ok = False
    return result
