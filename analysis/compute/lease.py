"""A lent GPU session's one command, end to end, and taking its results in here.

A lent GPU session runs commands of at most 10 minutes on a machine without network, with its own Python and torch,
and brings back at most 8 files from ``$OUT``: whatever is there when the command ends, or when it is killed at its
limit. Three steps make such a session count:

* here, ``python -m analysis lease prepare`` fills ``.lease/`` (git-ignored, carried to the device): the queue of
  trials in the order that decides claims soonest, with their estimates (:mod:`analysis.compute.queue`: nothing is
  counted or planned on the device), the gpu corpus compressed with xz (the device has other versions of the packages
  it is built from), the wheels of the pure-Python peers that flash-bench and gau-kernel compare against, and a
  source stamp (HEAD and its files' object names: the device's copy can carry the .git of an earlier commit);
* on the device, ``bash scripts/lease.sh LIMIT`` runs :func:`run_lease` under the limit its command really has:
  it restores the corpus (hash checked), installs the wheels, and runs the steps :func:`plan_lease` picks, each in a
  child process with a deadline taken from that limit; after **every** finished trial the child repacks every
  results file that is new or changed into ``$OUT/lease-results.tar.gz`` (written aside, then renamed), so a
  SIGKILL at any moment leaves every finished trial there;
* here, ``python -m analysis lease unpack FILE`` takes those files into ``results/`` (paths checked, JSON parsed) and
  assembles every record whose trials are then all stored. A second command on the still-warm machine continues
  from the first: unpack its archive here first, so the trials travel back with the checkout and are not run again.

The steps: the efficiency targets (``steptimes --targets``) while this kind of GPU is held to them and has not timed
them, then the campaign: the prepared queue, or, without one, every experiment in priority order.
"""

from __future__ import annotations

import hashlib
import io
import json
import lzma
import os
import re
import math
import signal
import subprocess
import sys
import tarfile
import tempfile
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

from analysis.compute.steptimes import Target, recorded_targets
from analysis.core.registry import EXPERIMENTS, config_for
from analysis.core.results import (
    REPO_ROOT,
    SOURCE_ENV,
    device_name,
    device_tag,
    git_commit,
    results_dir,
    write_json_atomic,
    write_source_stamp,
)

from analysis.core.size import validate_size
from analysis.core.trials import Experiment, MixedDevicesError, assemble_record
from analysis.tasks.data import PINNED_CORPUS_PATH, PINNED_CORPUS_SHA256, ensure_pinned_corpus


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
QUEUE = "queue.json"  # the ordered trials and their estimates (analysis.compute.queue), made by 'lease prepare'
TARGETS_CAP_S = 240.0  # the most seconds the efficiency targets may take of a session
END_S = 20.0  # kept at the end of the command's limit: the last packing, and the grace between SIGTERM and SIGKILL
STARTUP_S = 10.0  # a child's start before its first trial (imports; the queue spares it any planning)
KILL_GRACE_S = 10.0  # after SIGTERM at a deadline (a campaign stops between trials), then SIGKILL
PACK_ENV = "ANALYSIS_LEASE_PACK"  # in a lease's children: "<out folder>:<baseline file>", to repack after each trial


class LeaseError(ValueError):
    """A lease file or archive that cannot be used; the message names it and the reason."""


@dataclass(frozen=True)
class Step:
    """One child command of a lease: ``python -m analysis <argv>``, ended at ``cap_s`` seconds (None: the lease's
    deadline)."""

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
    limit_s: float  # the limit the command ran under, from its own start
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
    neither is there. The corpus's SHA-256 must be the pinned one (:func:`analysis.tasks.data.ensure_pinned_corpus`)."""

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


def plan_lease(size: str = "gpu", only: Sequence[str] | None = None, directory: str | os.PathLike[str] | None = None,
               tag: str | None = None, queue: str | os.PathLike[str] | None = None,
               targets: Sequence[Target] = ()) -> list[Step]:
    """The steps a lease runs, from what ``directory`` (default: results/) holds for the device tagged ``tag``
    (default: this machine's): at gpu scale, the efficiency ``targets`` while this kind is held to them and has not
    timed them all (``steptimes --targets --scale smoke`` runs their code path on a CPU in the tests), then
    the campaign: the prepared ``queue`` file when there is one (and no ``only``), else every experiment (or
    ``only``) in priority order."""

    size = validate_size(size)
    root = Path(directory) if directory is not None else results_dir()
    tag = tag or device_tag(device_name())
    names = list(only) if only else sorted(EXPERIMENTS)
    unknown = [n for n in names if n not in EXPERIMENTS]
    if unknown:
        raise ValueError(f"only must name experiments ({', '.join(sorted(EXPERIMENTS))}); got {', '.join(unknown)}")
    bench = root / "benchmarks"
    steps = []
    # the targets are set for an H100: another kind times them only while no H100 has (a lent H200's minutes go to
    # the campaign, which its own trials then size, rather than to targets it is not held to)
    h100_timed = bool(recorded_targets(size, targets, bench, "h100")) if size == "gpu" else False
    if size == "gpu" and targets and not only and (tag == "h100" or not h100_timed):
        have = recorded_targets(size, targets, bench, tag)
        left = [t.name for t in targets if t.name not in have]
        if left:
            steps.append(Step("targets", ("steptimes", "--targets", "--scale", size, "--out", str(bench), "--quiet"),
                              TARGETS_CAP_S, f"efficiency targets not yet timed on this device ({tag}): "
                                             f"{', '.join(left)}"))
    # not quiet: the log's line per finished trial, its seconds against the estimate, is what sizes the next lease
    if queue is not None and Path(queue).is_file() and not only:
        steps.append(Step("campaign", ("campaign", "--scale", size, "--queue", str(queue)), None,
                          "the prepared queue's trials still to run, in its order, for the time that is left"))
    else:
        sel = ("--only", *only) if only else ()
        steps.append(Step("campaign", ("campaign", "--scale", size, *sel), None,
                          "the campaign's missing trials in priority order, for the time that is left"))
    return steps


def _run_step(step: Step, deadline: float, env: dict[str, str]) -> StepRun:
    """Run one step as a child process; SIGTERM at ``deadline`` (monotonic), SIGKILL :data:`KILL_GRACE_S` later. A
    campaign is told the wall-clock time it must be done by, and starts no trial it expects to outrun."""
    argv = list(step.argv)
    if argv[0] == "campaign":
        argv += ["--deadline", f"{time.time() + deadline - time.monotonic():.1f}"]
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


def lease_deadline(limit_s: float, started_at: float | None = None, now: float | None = None) -> float:
    """Seconds from ``now`` (default: this moment, wall clock) until the lease must stop starting work: the command's
    real ``limit_s``, counted from ``started_at`` (when the command began; default ``now``), less :data:`END_S` for
    the last packing. ValueError naming ``limit`` when nothing would be left for a child to start in."""
    now = time.time() if now is None else now
    started_at = now if started_at is None else started_at
    if not (math.isfinite(limit_s) and limit_s > 0):
        raise ValueError(f"limit must be a positive number of seconds; got {limit_s!r}")
    if started_at > now + 1:
        raise ValueError(f"started-at must not be in the future; got {started_at:.0f}, now {now:.0f}")
    left = started_at + limit_s - END_S - now
    if left <= STARTUP_S:
        raise ValueError(f"limit must leave more than {END_S + STARTUP_S:.0f}s after the {now - started_at:.0f}s "
                         f"already spent (start-up and packing); got {limit_s:.0f}s")
    return left


def run_lease(limit_s: float, out: str | os.PathLike[str], size: str = "gpu", only: Sequence[str] | None = None,
              directory: str | os.PathLike[str] | None = None, lease_dir: str | os.PathLike[str] = LEASE_DIR,
              started_at: float | None = None, targets: Sequence[Target] = ()) -> LeaseSummary:
    """One lease command under a limit of ``limit_s`` seconds counted from ``started_at`` (the command's own start;
    default now): restore the corpus and wheels, run :func:`plan_lease`'s steps until :func:`lease_deadline`, with
    every new or changed results file repacked into ``out`` after each trial (by the campaign) and each step."""
    left = lease_deadline(limit_s, started_at)
    end = time.monotonic() + left
    t0 = time.monotonic()
    root = Path(directory) if directory is not None else results_dir()
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)

    summary = LeaseSummary(device_name(), validate_size(size), limit_s, None)
    before = snapshot(root)
    baseline = Path(tempfile.mkdtemp(prefix="lease-")) / "baseline.json"
    baseline.write_text(json.dumps(before))
    repack(root, before, out, summary)  # a summary is in out from the first second on
    had_corpus = (REPO_ROOT / PINNED_CORPUS_PATH).is_file()
    corpus = restore_corpus(lease_dir)
    site = install_wheels(lease_dir)
    print(f"lease: the gpu corpus {'checked' if had_corpus else 'restored and checked' if corpus else 'not here'}; "
          f"peer wheels {'installed' if site else 'not carried'}; {end - time.monotonic():.0f} s left for the steps",
          flush=True)
    stamp = Path(lease_dir) / SOURCE_STAMP
    if stamp.is_file():  # the device's copy may hold another commit's .git: records take the commit from the stamp
        os.environ[SOURCE_ENV] = str(stamp.resolve())
    summary.git_commit = git_commit()
    env = {**os.environ, "PYTHONUNBUFFERED": "1", PACK_ENV: f"{out.resolve()}{os.pathsep}{baseline}"}
    if directory is not None:
        env["ANALYSIS_RESULTS_DIR"] = str(root)
    for step in plan_lease(size, only, root, queue=Path(lease_dir) / QUEUE, targets=targets):
        remaining = end - time.monotonic()
        if remaining < STARTUP_S:
            print(f"lease: {step.name}: skipped, {remaining:.0f} s left", flush=True)
            continue
        deadline = end if step.cap_s is None else min(end, time.monotonic() + step.cap_s)
        summary.steps.append(_run_step(step, deadline, env))
        repack(root, before, out, summary)
    summary.seconds = time.monotonic() - t0
    repack(root, before, out, summary)
    print(f"lease: {len(summary.files)} results files new or changed, packed in {', '.join(summary.archives) or '-'}"
          f" ({summary.seconds:.0f} s)", flush=True)
    return summary


def repack(root: str | os.PathLike[str], before: dict[str, str], out: str | os.PathLike[str],
           summary: LeaseSummary | None = None) -> list[str]:
    """Pack every file under ``root`` that is new or changed since the :func:`snapshot` ``before`` into ``out``
    (:func:`pack`: each archive written aside and renamed), and the summary beside them; the files packed."""
    files = changed_files(root, before)
    archives = [p.name for p in pack(root, files, out)]
    if summary is not None:
        summary.files, summary.archives = files, archives
        write_json_atomic(Path(out) / SUMMARY, asdict(summary))
    return files


def repack_from_env() -> list[str] | None:
    """In a lease's child (:data:`PACK_ENV` set): :func:`repack` into the lease's out folder against its baseline;
    None elsewhere. The campaign calls it after each trial it stores."""
    spec = os.environ.get(PACK_ENV)
    if not spec:
        return None
    out, _, baseline = spec.rpartition(os.pathsep)
    return repack(results_dir(), json.loads(Path(baseline).read_text()), out)


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


def archive_name(i: int) -> str:
    """The name of the ``i``-th archive part (from 0): lease-results.tar.gz, lease-results.2.tar.gz, ..."""
    return ARCHIVE if i == 0 else ARCHIVE.replace(".tar.gz", f".{i + 1}.tar.gz")


def pack(root: str | os.PathLike[str], names: Sequence[str], out: str | os.PathLike[str],
         max_bytes: int = MAX_RETURN_BYTES) -> list[Path]:
    """Write ``names`` (relative to ``root``) into gzipped tar archives in ``out``, members named ``results/<name>``:
    one when it fits ``max_bytes``, else as few parts as fit (at most :data:`MAX_ARCHIVES`); each written aside and
    renamed over the last packing's, whose extra parts go."""
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
                path = out / archive_name(i)
                tmp = out / f".{path.name}.{os.getpid()}.tmp"  # a kill mid-write leaves the previous archive whole
                tmp.write_bytes(blob)
                os.replace(tmp, path)
                paths.append(path)
            for i in range(len(blobs), MAX_ARCHIVES):  # parts an earlier, larger packing needed
                (out / archive_name(i)).unlink(missing_ok=True)
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


def assemble_taken_in(report: UnpackReport, directory: str | os.PathLike[str] | None = None) -> list[str]:
    """Assemble the record of every experiment whose trials ``report`` took in and which now has all of them (a lease
    cut off at its limit stores trials but assembles nothing); a line per experiment touched."""

    touched = dict.fromkeys(tuple(Path(name).parts[1].rsplit(".", 1)) for name in report.added + report.replaced
                            if name.startswith("trials/") and len(Path(name).parts) == 3)
    lines = []
    for name, size in touched:
        if name not in EXPERIMENTS:
            lines.append(f"{name}: no such experiment here; its trial files are kept")
            continue
        exp = Experiment(EXPERIMENTS[name])
        try:
            record, status = assemble_record(exp, size, config_for(exp.module, size), directory)
        except MixedDevicesError as err:
            lines.append(f"{name}: no record: {err}")
            continue
        lines.append(f"{name} ({size}): " + ("every trial stored; record assembled" if record is not None
                                               else f"{status.describe()} stored; no record yet"))
    return lines
