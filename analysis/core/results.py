"""Recorded runs: one JSON file per experiment and scale, with provenance.

A record is written atomically (temporary file, fsync, rename), so an
interrupted run never leaves half a file, and validated on load: a corrupted,
truncated or foreign file raises :class:`ResultsFileError` naming the file.
"""

from __future__ import annotations

import dataclasses
import datetime as _dt
import json
import math
import os
import platform
import re
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from analysis.core.size import validate_size
from analysis.core.typed import fields_of

SCHEMA = "analysis.results/1"
REPO_ROOT = Path(__file__).resolve().parents[2]
RESULTS_DIR_ENV = "ANALYSIS_RESULTS_DIR"
PROVENANCE_KEYS = ("device", "torch", "cuda", "python", "git_commit", "git_dirty", "date", "wall_time_s")


class ResultsFileError(ValueError):
    """A results file that cannot be used; the message names the file and the reason."""


def results_dir() -> Path:
    """$ANALYSIS_RESULTS_DIR, or the repository's results/ folder."""
    return Path(os.environ.get(RESULTS_DIR_ENV) or REPO_ROOT / "results")


def to_jsonable(value: Any) -> Any:
    """Plain JSON data from numpy/torch scalars and arrays, tuples, dataclasses (their fields as
    :func:`analysis.core.typed.fields_of` gives them) and nested containers."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return to_jsonable(fields_of(value))
    if isinstance(value, dict):
        return {str(k): to_jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [to_jsonable(v) for v in value]
    if isinstance(value, np.ndarray):
        return to_jsonable(value.tolist())
    if isinstance(value, np.generic):
        return to_jsonable(value.item())
    if hasattr(value, "detach") and hasattr(value, "cpu"):  # a torch tensor
        return to_jsonable(value.detach().cpu().numpy())
    if isinstance(value, float) and not math.isfinite(value):
        return repr(value)  # "nan", "inf": JSON has no literal for them
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    raise TypeError(f"cannot store a {type(value).__name__} in a results record")


def _git(*args: str) -> str | None:
    try:
        out = subprocess.run(["git", *args], cwd=REPO_ROOT, capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() if out.returncode == 0 else None


def device_name() -> str:
    """The CUDA device's name, else the CPU's model name."""
    import torch

    if torch.cuda.is_available():
        return torch.cuda.get_device_name(0)
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return f"CPU: {line.split(':', 1)[1].strip()} ({os.cpu_count()} cores)"
    except OSError:
        pass
    return f"CPU: {platform.processor() or platform.machine()} ({os.cpu_count()} cores)"


# A copy of the checkout made elsewhere (a lent GPU machine's) may carry a .git of another commit than its files are:
# there this variable names a source stamp, written here from HEAD (write_source_stamp), which then says the commit
# and whether the files differ from it.
SOURCE_ENV = "ANALYSIS_SOURCE"


def blob_sha(data: bytes) -> str:
    """Git's object name of a file's bytes: SHA-1 of 'blob <size>\\0' followed by them."""
    import hashlib

    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def write_source_stamp(path: str | os.PathLike[str]) -> dict[str, Any]:
    """Write HEAD's commit and the object name of each tracked file outside results/ (git ls-tree -r HEAD) to
    ``path`` as JSON; the stamp written."""
    commit = _git("rev-parse", "HEAD")
    listing = _git("ls-tree", "-r", "HEAD")
    if commit is None or listing is None:
        raise ValueError("a source stamp needs a git checkout with a commit")
    blobs = {}
    for line in listing.splitlines():
        meta, name = line.split("\t", 1)
        mode, kind, sha = meta.split()
        if kind == "blob" and not name.startswith("results/"):
            blobs[name] = [mode, sha]
    stamp = {"commit": commit, "blobs": blobs}
    Path(path).write_text(json.dumps(stamp))
    return stamp


def _source_stamp() -> dict[str, Any] | None:
    path = os.environ.get(SOURCE_ENV)
    return json.loads(Path(path).read_text()) if path else None


def stamp_differs(stamp: dict[str, Any], root: str | os.PathLike[str] = REPO_ROOT) -> bool:
    """Whether a tracked file of ``stamp`` is missing under ``root`` or holds other bytes (a link: another target)."""
    base = Path(root)
    for name, (mode, sha) in stamp["blobs"].items():
        path = base / name
        if mode == "120000":
            if not path.is_symlink() or blob_sha(os.readlink(path).encode()) != sha:
                return True
        elif not path.is_file() or path.is_symlink() or blob_sha(path.read_bytes()) != sha:
            return True
    return False


def git_commit() -> str | None:
    """The repository's HEAD commit (a source stamp's, where $ANALYSIS_SOURCE names one), None outside git."""
    stamp = _source_stamp()
    return str(stamp["commit"]) if stamp is not None else _git("rev-parse", "HEAD")


def tree_dirty() -> bool | None:
    """Whether the checkout has uncommitted changes to tracked files outside results/ (None outside git): records
    written earlier in the same session do not make the code dirty. With a source stamp: whether the files differ
    from the stamp's."""
    stamp = _source_stamp()
    if stamp is not None:
        return stamp_differs(stamp)
    status = _git("status", "--porcelain", "--untracked-files=no", "--", ".", ":(exclude)results")
    return None if status is None else bool(status)


def device_tag(name: str) -> str:
    """A file-name tag of a device name: 'NVIDIA H100 80GB HBM3' -> 'h100', a CPU -> 'cpu'."""
    if name.startswith("CPU"):
        return "cpu"
    m = re.search(r"\b([A-Z]\d{2,4}[A-Za-z]?)\b", name)
    return m.group(1).lower() if m else re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")


def provenance(wall_time_s: float) -> dict[str, Any]:
    """Device, torch and CUDA versions, Python, git commit (and whether the tree was dirty), date, wall time, and the
    CPU's vector capability as torch uses it."""
    import torch

    return {
        "device": device_name(),
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
        "python": platform.python_version(),
        "git_commit": git_commit(),
        "git_dirty": tree_dirty(),
        "date": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "wall_time_s": round(float(wall_time_s), 2),
        # the vector instructions torch's CPU kernels use: float results can differ between AVX2 and AVX-512 machines
        "cpu_capability": torch.backends.cpu.get_cpu_capability(),
    }


@dataclass(frozen=True)
class Record:
    """One recorded run: what ran (experiment, scale, config, seed), what it measured (data), where (provenance)."""

    experiment: str
    scale: str
    seed: int
    config: dict[str, Any]
    data: dict[str, Any]
    provenance: dict[str, Any]
    fingerprint: dict[str, Any] | None = None  # config and code fingerprints (analysis.core.fingerprint); None before them
    trials: dict[str, Any] | None = None  # {"total": m, "done": k}: assembled from trial files (analysis.core.trials)

    def to_dict(self) -> dict[str, Any]:
        """The JSON document of this record."""
        return {
            "schema": SCHEMA,
            "experiment": self.experiment,
            "scale": self.scale,
            "seed": self.seed,
            "config": to_jsonable(self.config),
            "provenance": to_jsonable(self.provenance),
            "data": to_jsonable(self.data),
            **({} if self.fingerprint is None else {"fingerprint": to_jsonable(self.fingerprint)}),
            **({} if self.trials is None else {"trials": to_jsonable(self.trials)}),
        }

    def describe(self) -> str:
        """One line of provenance for a figure caption or a table."""
        p = self.provenance
        commit = (p.get("git_commit") or "unknown")[:10] + (" (dirty tree)" if p.get("git_dirty") else "")
        cuda = f", CUDA {p['cuda']}" if p.get("cuda") else ""
        isa = f" with {p['cpu_capability']} kernels" if p.get("cpu_capability") and not p.get("cuda") else ""
        return (
            f"{self.experiment} at {self.scale} scale, measured on {p.get('device')}{isa}, torch {p.get('torch')}{cuda}, "
            f"commit {commit}, {str(p.get('date', ''))[:10]}, seed {self.seed}, {p.get('wall_time_s')} s"
        )


def record_path(experiment: str, size: str, directory: str | os.PathLike[str] | None = None) -> Path:
    """results/<experiment>.<scale>.json"""
    validate_size(size)
    if not experiment or "/" in experiment or experiment.startswith("."):
        raise ValueError(f"experiment must be a plain name; got {experiment!r}")
    return Path(directory if directory is not None else results_dir()) / f"{experiment}.{size}.json"


def from_jsonable(value: Any) -> Any:
    """The inverse of :func:`to_jsonable` for numbers: the strings "nan", "inf" and "-inf" become floats again."""
    if isinstance(value, dict):
        return {k: from_jsonable(v) for k, v in value.items()}
    if isinstance(value, list):
        return [from_jsonable(v) for v in value]
    if isinstance(value, str) and value in ("nan", "inf", "-inf"):
        return float(value)
    return value


def save_record(record: Record, directory: str | os.PathLike[str] | None = None) -> Path:
    """Write ``record`` atomically to its path and return the path."""
    path = record_path(record.experiment, record.scale, directory)
    write_json_atomic(path, record.to_dict())
    return path


def write_json_atomic(path: Path, doc: dict[str, Any]) -> None:
    """Write ``doc`` as JSON to ``path`` through a temporary file, fsync and rename: never half a file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    text = json.dumps(doc, indent=1, allow_nan=False)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.name, suffix=".tmp")
    try:
        with os.fdopen(fd, "w") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, 0o644)  # mkstemp creates 0600; a record is meant to be shared
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def load_record(path: str | os.PathLike[str]) -> Record:
    """Read and validate a record; any problem raises ResultsFileError naming the file."""
    p = Path(path)
    try:
        text = p.read_text()
    except FileNotFoundError:
        raise ResultsFileError(f"{p}: no such results file") from None
    except (OSError, UnicodeDecodeError) as err:
        raise ResultsFileError(f"{p}: cannot be read as text ({err})") from None
    if not text.strip():
        raise ResultsFileError(f"{p}: the file is empty")
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as err:
        raise ResultsFileError(f"{p}: not valid JSON, the file may be truncated or corrupted ({err})") from None
    if not isinstance(doc, dict) or doc.get("schema") != SCHEMA:
        raise ResultsFileError(f"{p}: not a results record (expected schema {SCHEMA!r})")
    problems = []
    for key, kind in (("experiment", str), ("scale", str), ("seed", int), ("config", dict), ("data", dict), ("provenance", dict)):
        if not isinstance(doc.get(key), kind):
            problems.append(f"'{key}' missing or not a {kind.__name__}")
    if not problems:
        try:
            validate_size(doc["scale"])
        except ValueError as err:
            problems.append(str(err))
        missing = [k for k in PROVENANCE_KEYS if k not in doc["provenance"]]
        if missing:
            problems.append(f"provenance lacks {', '.join(missing)}")
    if problems:
        raise ResultsFileError(f"{p}: malformed results record: {'; '.join(problems)}")
    fp = doc.get("fingerprint")
    if fp is not None and not (isinstance(fp, dict) and {"config", "code"} <= set(fp)):
        raise ResultsFileError(f"{p}: malformed results record: 'fingerprint' lacks config or code")
    trials = doc.get("trials")
    if trials is not None and not (isinstance(trials, dict) and {"total", "done"} <= set(trials)):
        raise ResultsFileError(f"{p}: malformed results record: 'trials' lacks total or done")
    return Record(doc["experiment"], doc["scale"], doc["seed"], doc["config"], doc["data"], doc["provenance"], fp,
                  trials)


def find_record(experiment: str, size: str, directory: str | os.PathLike[str] | None = None) -> Record | None:
    """The stored record of ``experiment`` at ``size``, or None when none was recorded."""
    path = record_path(experiment, size, directory)
    if not path.exists():
        return None
    record = load_record(path)
    if record.experiment != experiment or record.scale != size:
        raise ResultsFileError(f"{path}: holds {record.experiment!r} at {record.scale!r}, not {experiment!r} at {size!r}")
    return record
