"""A lent GPU session's one command, end to end, and taking its results in here.

A lent GPU session runs commands of at most 10 minutes on a machine without network, with its own Python and torch,
and brings back at most 8 files from ``$OUT``. Three steps make such a session count:

* here, ``python -m analysis lease prepare`` fills ``.lease/`` (git-ignored, carried to the device): the gpu corpus
  compressed with xz (the device has other versions of the packages it is built from, so it cannot rebuild the same
  bytes), the wheels of the pure-Python peers that flash-bench and gau-kernel compare against, and a source stamp
  (HEAD and its files' object names: the device's copy can carry the .git of an earlier commit, so its records take
  the commit, and whether their code differs from it, from the stamp);
* on the device, ``bash scripts/lease.sh 9m`` runs :func:`run_lease`: it restores the corpus (hash checked), installs
  the wheels, runs the steps :func:`plan_lease` picks from what ``results/`` already holds for this device, each in a
  child process with a deadline, and packs every results file that is new or changed into
  ``$OUT/lease-results.tar.gz`` beside ``lease-summary.json``;
* here, ``python -m analysis lease unpack FILE`` takes those files into ``results/`` (paths checked, JSON parsed).

The steps, in order, each only while it still has something to do: the campaign's first experiments (speed and memory
on the GPU: PRIORITY below :data:`FIRST_STAGE_PRIORITY`), the efficiency targets (``steptimes --targets``), the step
times of the campaign's models (``steptimes``), then the campaign in priority order for the time that is left.
"""

from __future__ import annotations

import hashlib
import io
import json
import lzma
import os
import re
import signal
import subprocess
import sys
import tarfile
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

from analysis.results import (
    REPO_ROOT,
    SOURCE_ENV,
    device_name,
    device_tag,
    git_commit,
    results_dir,
    write_json_atomic,
    write_source_stamp,
)
from analysis.scale import validate_scale

LEASE_DIR = REPO_ROOT / ".lease"
CORPUS_XZ = "pinned-sources.txt.xz"
SOURCE_STAMP = "source.json"  # the commit the carried checkout is, and its files' object names (results.SOURCE_ENV)
WHEELS = "wheels"
PEERS = ("FLASH-pytorch", "rotary-embedding-torch")  # the peers' pure-Python wheels, at requirements.txt's pins
ARCHIVE = "lease-results.tar.gz"  # then lease-results.2.tar.gz, ... when one would exceed MAX_RETURN_BYTES
SUMMARY = "lease-summary.json"
MAX_RETURN_BYTES = 16 * 2**20  # the largest file a device command brings back
MAX_TRAVEL_BYTES = 64 * 2**20  # the most a device command takes along: the checkout's files and the carried ones
MAX_ARCHIVES = 6  # of the 8 files a command brings back: the summary and the log take two
FIRST_STAGE_PRIORITY = 20  # flash-bench and gau-kernel: the GPU's speed and memory, run first in every session
TARGETS_CAP_S = 240.0  # the most seconds the efficiency targets may take of a session
STEPTIMES_CAP_S = 150.0  # the most seconds the campaign models' step times may take
PACK_RESERVE_S = 20.0  # left at the end of the budget for packing
STARTUP_S = 40.0  # a child's start before its own budget runs: imports, the campaign's plans (FLOP counts)
KILL_GRACE_S = 10.0  # after SIGTERM at a deadline (a campaign stops between trials), then SIGKILL


class LeaseError(ValueError):
    """A lease file or archive that cannot be used; the message names it and the reason."""


@dataclass(frozen=True)
class Step:
    """One child command of a lease: ``python -m analysis <argv>``, ended at ``cap_s`` seconds (None: the budget)."""

    name: str
    argv: tuple[str, ...]
    cap_s: float | None
    why: str


@dataclass
class StepRun:
    """What one step did: its exit status (None: killed at its deadline) and seconds."""

    name: str
    argv: list[str]
    returncode: int | None
    seconds: float


@dataclass
class LeaseSummary:
    """What a lease command did, written to ``lease-summary.json`` beside the archives."""

    device: str
    scale: str
    budget_s: float
    git_commit: str | None
    steps: list[StepRun] = field(default_factory=list)
    files: list[str] = field(default_factory=list)  # results files new or changed, relative to results/
    archives: list[str] = field(default_factory=list)
    seconds: float = 0.0


# --- here: what travels -----------------------------------------------------------------------------------------


def pinned_versions(requirements: str | os.PathLike[str] = REPO_ROOT / "requirements.txt",
                    names: Sequence[str] = PEERS) -> dict[str, str]:
    """The ``name==version`` pins of ``names`` in a requirements file (names compared case-blind, - and _ alike)."""
    def canonical(name: str) -> str:
        return re.sub(r"[-_.]+", "-", name).lower()

    wanted = {canonical(n): n for n in names}
    found: dict[str, str] = {}
    for line in Path(requirements).read_text().splitlines():
        m = re.match(r"\s*([A-Za-z0-9_.-]+)\s*==\s*([^\s;#]+)", line)
        if m and canonical(m.group(1)) in wanted:
            found[wanted[canonical(m.group(1))]] = m.group(2)
    missing = [n for n in names if n not in found]
    if missing:
        raise LeaseError(f"{requirements} pins no version of {', '.join(missing)}")
    return found


def compress_corpus(corpus: str | os.PathLike[str], lease_dir: str | os.PathLike[str] = LEASE_DIR) -> Path:
    """``<lease_dir>/pinned-sources.txt.xz``: the corpus file compressed with xz (rewritten only when its content
    differs from the corpus)."""
    data = Path(corpus).read_bytes()
    out = Path(lease_dir) / CORPUS_XZ
    if out.is_file():
        try:
            if lzma.decompress(out.read_bytes()) == data:
                return out
        except lzma.LZMAError:
            pass
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(out.name + f".{os.getpid()}.tmp")
    tmp.write_bytes(lzma.compress(data, preset=6))
    os.replace(tmp, out)
    return out


def download_wheels(lease_dir: str | os.PathLike[str] = LEASE_DIR,
                    pins: dict[str, str] | None = None) -> list[Path]:
    """The peers' wheels in ``<lease_dir>/wheels``, fetched with pip from the package index when missing."""
    pins = pins or pinned_versions()
    folder = Path(lease_dir) / WHEELS
    folder.mkdir(parents=True, exist_ok=True)
    out = []
    for name, version in pins.items():
        stem = re.sub(r"[-_.]+", "_", name).lower()
        have = [p for p in folder.glob("*.whl") if p.name.lower().startswith(f"{stem}-{version}-")]
        if not have:
            subprocess.run([sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "--only-binary=:all:",
                            "--dest", str(folder), f"{name}=={version}"], check=True)
            have = [p for p in folder.glob("*.whl") if p.name.lower().startswith(f"{stem}-{version}-")]
        if not have:
            raise LeaseError(f"pip saved no wheel of {name}=={version} in {folder}")
        out.extend(have)
    return out


def travelling_bytes(root: str | os.PathLike[str] = REPO_ROOT, carried: Sequence[str] = (".lease",)) -> int:
    """Bytes of what a device command takes along from the checkout at ``root``: the files git tracks, the untracked
    ones it does not ignore, and the ``carried`` (ignored) folders; :data:`MAX_TRAVEL_BYTES` at most."""
    root = Path(root)
    listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=root,
                            capture_output=True, check=True).stdout.split(b"\0")
    files = {root / name.decode() for name in listed if name}
    for folder in carried:
        files.update(p for p in (root / folder).rglob("*") if p.is_file())
    return sum(p.stat().st_size for p in files if p.is_file())


# --- on the device: restoring what travelled ---------------------------------------------------------------------


def restore_corpus(lease_dir: str | os.PathLike[str] = LEASE_DIR, target: str | os.PathLike[str] | None = None,
                   expected_sha256: str | None = None) -> Path | None:
    """Decompress ``<lease_dir>/pinned-sources.txt.xz`` to the corpus path when that file is missing; None when
    neither is there. The corpus's SHA-256 must be the pinned one (:func:`analysis.data.ensure_pinned_corpus`)."""
    from analysis.data import PINNED_CORPUS_PATH, PINNED_CORPUS_SHA256, ensure_pinned_corpus

    target = Path(target) if target is not None else REPO_ROOT / PINNED_CORPUS_PATH
    expected = PINNED_CORPUS_SHA256 if expected_sha256 is None else expected_sha256
    xz = Path(lease_dir) / CORPUS_XZ
    if not target.is_file():
        if not xz.is_file():
            return None
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = target.with_name(target.name + f".{os.getpid()}.tmp")
        try:
            tmp.write_bytes(lzma.decompress(xz.read_bytes()))
        except lzma.LZMAError as err:
            raise LeaseError(f"{xz} is not an xz file ({err})") from None
        os.replace(tmp, target)
    return ensure_pinned_corpus(target, expected)


def install_wheels(lease_dir: str | os.PathLike[str] = LEASE_DIR, site: str | os.PathLike[str] = "/tmp/lease-site"
                   ) -> Path | None:
    """Install the carried wheels into ``site`` (no index, no dependencies) and put it first on this process's and
    its children's path; None when no wheel travelled."""
    wheels = sorted((Path(lease_dir) / WHEELS).glob("*.whl"))
    if not wheels:
        return None
    subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-index", "--no-deps", "--no-compile",
                    "--no-cache-dir", "--upgrade", "--target", str(site), *map(str, wheels)], check=True)
    sys.path.insert(0, str(site))
    os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (str(site), os.environ.get("PYTHONPATH", "")) if p)
    return Path(site)


# --- the steps ----------------------------------------------------------------------------------------------------


def plan_lease(scale: str = "gpu", only: Sequence[str] | None = None, directory: str | os.PathLike[str] | None = None,
               tag: str | None = None) -> list[Step]:
    """The steps a lease runs, from what ``directory`` (default: results/) holds for the device tagged ``tag``
    (default: this machine's): the first experiments while any is incomplete, the efficiency targets and the step
    times while this device has no record of them, then the campaign (every experiment, or ``only``)."""
    from analysis.core.campaign import campaign_plans, priority_of, runs_on
    from analysis.experiments import EXPERIMENTS, config_for

    scale = validate_scale(scale)
    root = Path(directory) if directory is not None else results_dir()
    tag = tag or device_tag(device_name())
    names = list(only) if only else sorted(EXPERIMENTS)
    unknown = [n for n in names if n not in EXPERIMENTS]
    if unknown:
        raise ValueError(f"only must name experiments ({', '.join(sorted(EXPERIMENTS))}); got {', '.join(unknown)}")
    # an experiment whose config runs on the CPU needs no GPU: it is left to the campaign, which starts it if it fits
    first = [n for n in names if priority_of(EXPERIMENTS[n]) < FIRST_STAGE_PRIORITY
             and runs_on(config_for(EXPERIMENTS[n], scale), "cuda") == "cuda"]
    bench = root / "benchmarks"
    steps = []
    if first and any(p.status.missing for p in campaign_plans(scale, first, root)):
        steps.append(Step("first", ("campaign", "--scale", scale, "--only", *first, "--quiet"), None,
                          "speed and memory on this device, which every later verdict is read beside"))
    from analysis.steptimes import efficiency_targets, recorded_targets, training_models

    # the targets are set for an H100: another kind times them only while no H100 has (a lent H200's minutes go to
    # the step times and the campaign, which it sizes and runs, rather than to targets it is not held to)
    h100_timed = bool(recorded_targets(scale, bench, "h100")) if scale != "cpu" else False
    if scale != "cpu" and not only and (tag == "h100" or not h100_timed):
        have = recorded_targets(scale, bench, tag)
        left = [t.name for t in efficiency_targets(scale) if t.name not in have]
        if left:
            steps.append(Step("targets", ("steptimes", "--targets", "--scale", scale, "--out", str(bench), "--quiet"),
                              TARGETS_CAP_S, f"efficiency targets not yet timed on this device ({tag}): "
                                             f"{', '.join(left)}"))
    sel = ("--only", *only) if only else ()
    if not (bench / f"steptimes.{scale}.{tag}.json").exists() and training_models(scale, names):
        steps.append(Step("steptimes", ("steptimes", "--scale", scale, *sel, "--budget",
                                        f"{STEPTIMES_CAP_S - STARTUP_S:.0f}s", "--out", str(bench), "--quiet"),
                          STEPTIMES_CAP_S, f"no step times of the campaign's models on this device ({tag})"))
    steps.append(Step("campaign", ("campaign", "--scale", scale, *sel, "--quiet"), None,
                      "the campaign's missing trials in priority order, for the time that is left"))
    return steps


def _run_step(step: Step, deadline: float, env: dict[str, str]) -> StepRun:
    """Run one step as a child process; SIGTERM at ``deadline`` (monotonic), SIGKILL :data:`KILL_GRACE_S` later."""
    argv = list(step.argv)
    if argv[0] == "campaign":  # a campaign starts no trial that it expects to outrun its budget
        argv += ["--budget", f"{max(1.0, deadline - time.monotonic() - STARTUP_S):.0f}s"]
    start = time.monotonic()
    print(f"lease: {step.name}: python -m analysis {' '.join(argv)}", flush=True)
    proc = subprocess.Popen([sys.executable, "-m", "analysis", *argv], env=env, cwd=REPO_ROOT)
    try:
        code: int | None = proc.wait(timeout=max(0.0, deadline - time.monotonic()))
    except subprocess.TimeoutExpired:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=KILL_GRACE_S)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        code = None
    seconds = time.monotonic() - start
    print(f"lease: {step.name}: " + (f"exit {code}" if code is not None else "stopped at its deadline") +
          f" after {seconds:.0f} s", flush=True)
    return StepRun(step.name, argv, code, seconds)


def check_budget(budget_s: float) -> float:
    """``budget_s`` when it exceeds a child's start-up and packing (:data:`STARTUP_S` + :data:`PACK_RESERVE_S`),
    else ValueError."""
    if not (budget_s > PACK_RESERVE_S + STARTUP_S):
        raise ValueError(f"budget must exceed {PACK_RESERVE_S + STARTUP_S:.0f}s (start-up and packing); "
                         f"got {budget_s:.0f}s")
    return budget_s


def run_lease(budget_s: float, out: str | os.PathLike[str], scale: str = "gpu", only: Sequence[str] | None = None,
              directory: str | os.PathLike[str] | None = None, lease_dir: str | os.PathLike[str] = LEASE_DIR
              ) -> LeaseSummary:
    """One lease command: restore the corpus and wheels, run :func:`plan_lease`'s steps within ``budget_s`` seconds
    (the last :data:`PACK_RESERVE_S` kept for packing), then pack every new or changed results file into ``out``."""
    check_budget(budget_s)
    t0 = time.monotonic()
    root = Path(directory) if directory is not None else results_dir()
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    from analysis.data import PINNED_CORPUS_PATH

    had_corpus = (REPO_ROOT / PINNED_CORPUS_PATH).is_file()
    corpus = restore_corpus(lease_dir)
    site = install_wheels(lease_dir)
    print(f"lease: the gpu corpus {'checked' if had_corpus else 'restored and checked' if corpus else 'not here'}; "
          f"peer wheels {'installed' if site else 'not carried'}", flush=True)
    stamp = Path(lease_dir) / SOURCE_STAMP
    if stamp.is_file():  # the device's copy may hold another commit's .git: records take the commit from the stamp
        os.environ[SOURCE_ENV] = str(stamp.resolve())
    summary = LeaseSummary(device_name(), validate_scale(scale), budget_s, git_commit())
    before = snapshot(root)
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    if directory is not None:
        env["ANALYSIS_RESULTS_DIR"] = str(root)
    end = t0 + budget_s - PACK_RESERVE_S
    for step in plan_lease(scale, only, root):
        left = end - time.monotonic()
        if left < STARTUP_S:
            print(f"lease: {step.name}: skipped, {left:.0f} s left", flush=True)
            continue
        deadline = end if step.cap_s is None else min(end, time.monotonic() + step.cap_s)
        summary.steps.append(_run_step(step, deadline, env))
    summary.files = changed_files(root, before)
    summary.archives = [p.name for p in pack(root, summary.files, out)]
    summary.seconds = time.monotonic() - t0
    write_json_atomic(out / SUMMARY, asdict(summary))
    print(f"lease: {len(summary.files)} results files new or changed, packed in {', '.join(summary.archives) or '-'}"
          f" ({summary.seconds:.0f} s)", flush=True)
    return summary


# --- packing and unpacking ------------------------------------------------------------------------------------------


def snapshot(root: str | os.PathLike[str]) -> dict[str, str]:
    """SHA-256 of every results file under ``root`` (temporary files left out), by path relative to ``root``."""
    root = Path(root)
    out = {}
    for p in sorted(root.rglob("*")):
        if p.is_file() and not p.name.endswith(".tmp"):
            out[p.relative_to(root).as_posix()] = hashlib.sha256(p.read_bytes()).hexdigest()
    return out


def changed_files(root: str | os.PathLike[str], before: dict[str, str]) -> list[str]:
    """Files under ``root`` that are new or whose content changed since the :func:`snapshot` ``before``."""
    return [name for name, digest in snapshot(root).items() if before.get(name) != digest]


def _tar_gz(root: Path, names: Sequence[str]) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz", format=tarfile.PAX_FORMAT) as tar:
        for name in names:
            data = (root / name).read_bytes()
            info = tarfile.TarInfo(f"results/{name}")
            info.size, info.mtime, info.mode = len(data), 0, 0o644
            tar.addfile(info, io.BytesIO(data))
    return buf.getvalue()


def pack(root: str | os.PathLike[str], names: Sequence[str], out: str | os.PathLike[str],
         max_bytes: int = MAX_RETURN_BYTES) -> list[Path]:
    """Write ``names`` (relative to ``root``) into gzipped tar archives in ``out``, members named ``results/<name>``:
    one when it fits ``max_bytes``, else as few parts as fit (at most :data:`MAX_ARCHIVES`)."""
    root, out = Path(root), Path(out)
    if not names:
        return []
    size = {name: (root / name).stat().st_size for name in names}
    for parts in range(1, MAX_ARCHIVES + 1):
        groups: list[list[str]] = [[] for _ in range(parts)]
        sizes = [0] * parts
        for name in sorted(names, key=lambda n: -size[n]):  # largest first, into the lightest part
            i = sizes.index(min(sizes))
            groups[i].append(name)
            sizes[i] += size[name]
        blobs = [_tar_gz(root, sorted(g)) for g in groups if g]
        if all(len(b) <= max_bytes for b in blobs):
            paths = []
            for i, blob in enumerate(blobs):
                path = out / (ARCHIVE if i == 0 else ARCHIVE.replace(".tar.gz", f".{i + 1}.tar.gz"))
                path.write_bytes(blob)
                paths.append(path)
            return paths
    raise LeaseError(f"{len(names)} results files do not fit {MAX_ARCHIVES} archives of {max_bytes} bytes")


@dataclass
class UnpackReport:
    """Results files taken in from lease archives: new, replacing a different file, or the same as here."""

    added: list[str] = field(default_factory=list)
    replaced: list[str] = field(default_factory=list)
    same: list[str] = field(default_factory=list)


def unpack(archives: Sequence[str | os.PathLike[str]], directory: str | os.PathLike[str] | None = None
           ) -> UnpackReport:
    """Take the files of lease archives into ``directory`` (default: results/). Every member must be a regular file
    named ``results/<relative path>`` ending in .json, with no '..', holding JSON; one that is not refuses the whole
    archive before anything is written."""
    root = Path(directory) if directory is not None else results_dir()
    files: dict[str, bytes] = {}
    for archive in archives:
        try:
            with tarfile.open(archive, mode="r:gz") as tar:
                for m in tar.getmembers():
                    if m.isdir():
                        continue
                    parts = Path(m.name).parts
                    if (not m.isreg() or len(parts) < 2 or parts[0] != "results" or ".." in parts
                            or m.name.startswith("/") or not m.name.endswith(".json")):
                        raise LeaseError(f"{archive}: member {m.name!r} is not a results/ JSON file")
                    raw = tar.extractfile(m)
                    data = raw.read() if raw is not None else b""
                    try:
                        json.loads(data)
                    except ValueError as err:
                        raise LeaseError(f"{archive}: member {m.name!r} is not JSON ({err})") from None
                    files[Path(*parts[1:]).as_posix()] = data
        except (tarfile.TarError, OSError, EOFError) as err:
            raise LeaseError(f"{archive} is not a lease archive ({err})") from None
    report = UnpackReport()
    for name, data in sorted(files.items()):
        path = root / name
        if path.is_file():
            if path.read_bytes() == data:
                report.same.append(name)
                continue
            report.replaced.append(name)
        else:
            report.added.append(name)
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(path.name + f".{os.getpid()}.tmp")
        tmp.write_bytes(data)
        os.replace(tmp, path)
    return report
