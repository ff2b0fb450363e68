"""Corpora that every machine has without a download, as byte-level tokens.

* :func:`stdlib_corpus`: the source text and docstrings of a fixed, recorded
  selection of Python standard-library modules, read from the running
  interpreter (about 4 MB); whole files are held out for validation.
* :func:`file_corpus`: any UTF-8 text file of the user's.
* :class:`MarkovSource`: a random Markov chain of known order whose entropy
  rate is computed exactly, so a model's loss can be set against its floor;
* :func:`random_windows`, :func:`fixed_windows`: the (input, next-token target)
  windows the trainer and the evaluations draw from a token stream.

Every corpus carries a SHA-256 of its bytes, printed with every result.
"""

from __future__ import annotations

import hashlib
import os
import sysconfig
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import numpy.typing as npt
import torch
from scipy import special

U8 = npt.NDArray[np.uint8]

# The fixed selection (paths relative to the standard library). Validation files are held out whole.
STDLIB_TRAIN_FILES: tuple[str, ...] = (
    "_collections_abc.py", "_pydecimal.py", "_pyio.py", "_strptime.py", "aifc.py", "argparse.py", "ast.py",
    "asyncore.py", "base64.py", "bdb.py", "cgi.py", "codecs.py", "compileall.py", "configparser.py",
    "contextlib.py", "dataclasses.py", "datetime.py", "difflib.py", "dis.py", "doctest.py", "enum.py",
    "ftplib.py", "functools.py", "gettext.py", "imaplib.py", "inspect.py", "ipaddress.py", "locale.py",
    "mailbox.py", "mimetypes.py", "modulefinder.py", "nntplib.py", "ntpath.py", "optparse.py", "os.py",
    "pathlib.py", "pdb.py", "pickle.py", "pickletools.py", "pkgutil.py", "platform.py", "plistlib.py",
    "profile.py", "pstats.py", "pydoc.py", "random.py", "shutil.py", "site.py", "smtpd.py", "smtplib.py",
    "socket.py", "socketserver.py", "ssl.py", "subprocess.py", "sysconfig.py", "tarfile.py", "telnetlib.py",
    "tempfile.py", "threading.py", "trace.py", "traceback.py", "turtle.py", "typing.py", "uuid.py",
    "warnings.py", "wave.py", "weakref.py", "webbrowser.py", "zipfile.py", "zipimport.py",
)
STDLIB_VAL_FILES: tuple[str, ...] = (
    "statistics.py", "fractions.py", "heapq.py", "calendar.py", "pprint.py", "gzip.py", "tokenize.py",
    "uu.py", "textwrap.py", "bisect.py", "json/decoder.py", "json/encoder.py",
)


class CorpusError(ValueError):
    """A corpus that cannot be used (missing, empty, not text); the message names the file."""


@dataclass(frozen=True)
class Corpus:
    """Byte tokens split into train and validation, with a content hash and a description."""

    name: str
    train: U8
    val: U8
    sha256: str
    description: str
    files: tuple[str, ...] = ()
    entropy_rate: float | None = None  # nats per token, when the source's is known exactly
    extra: dict[str, float] = field(default_factory=dict)

    @property
    def short_hash(self) -> str:
        """The first 12 hex digits of the content hash."""
        return self.sha256[:12]

    def summary(self) -> dict[str, object]:
        """Plain data for a results record."""
        return {
            "name": self.name,
            "sha256": self.sha256,
            "train_tokens": int(self.train.size),
            "val_tokens": int(self.val.size),
            "description": self.description,
            "files": list(self.files),
            "entropy_rate": self.entropy_rate,
            **self.extra,
        }


def _sha256(*parts: bytes) -> str:
    h = hashlib.sha256()
    for part in parts:
        h.update(len(part).to_bytes(8, "little"))
        h.update(part)
    return h.hexdigest()


def _tokens(data: bytes) -> U8:
    return np.frombuffer(data, dtype=np.uint8).copy()


def stdlib_corpus(stdlib: str | os.PathLike[str] | None = None) -> Corpus:
    """The fixed selection of standard-library sources; validation = STDLIB_VAL_FILES, held out whole."""
    root = Path(stdlib or sysconfig.get_paths()["stdlib"])

    def read(names: tuple[str, ...]) -> tuple[list[bytes], list[str]]:
        blobs, found = [], []
        for name in names:
            path = root / name
            if path.is_file():
                blobs.append(path.read_bytes())
                found.append(name)
        return blobs, found

    train_blobs, train_found = read(STDLIB_TRAIN_FILES)
    val_blobs, val_found = read(STDLIB_VAL_FILES)
    if len(train_found) < len(STDLIB_TRAIN_FILES) // 2 or len(val_found) < len(STDLIB_VAL_FILES) // 2:
        raise CorpusError(
            f"{root}: fewer than half of the recorded standard-library files exist "
            f"({len(train_found)}/{len(STDLIB_TRAIN_FILES)} train, {len(val_found)}/{len(STDLIB_VAL_FILES)} validation)"
        )
    train, val = b"".join(train_blobs), b"".join(val_blobs)
    return Corpus(
        name="python-stdlib",
        train=_tokens(train),
        val=_tokens(val),
        sha256=_sha256(train, val),
        description=f"Python {sysconfig.get_python_version()} standard-library sources ({len(train_found)} train + {len(val_found)} validation files)",
        files=tuple(train_found + val_found),
    )


def file_corpus(path: str | os.PathLike[str], val_fraction: float = 0.1) -> Corpus:
    """A user's UTF-8 text file; the last ``val_fraction`` of its bytes is the validation split."""
    if not 0 < val_fraction < 1:
        raise ValueError(f"val_fraction must be in (0, 1); got {val_fraction!r}")
    p = Path(path)
    if not p.exists():
        raise CorpusError(f"corpus file {str(p)!r} does not exist")
    if not p.is_file():
        raise CorpusError(f"corpus file {str(p)!r} is not a regular file")
    data = p.read_bytes()
    if not data:
        raise CorpusError(f"corpus file {str(p)!r} is empty")
    if b"\x00" in data:
        raise CorpusError(f"corpus file {str(p)!r} is not text (it contains NUL bytes)")
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as err:
        raise CorpusError(f"corpus file {str(p)!r} is not UTF-8 text ({err.reason} at byte {err.start})") from None
    cut = int(round(len(data) * (1 - val_fraction)))
    if cut < 2 or len(data) - cut < 2:
        raise CorpusError(f"corpus file {str(p)!r} is too short to split ({len(data)} bytes)")
    return Corpus(
        name=p.name,
        train=_tokens(data[:cut]),
        val=_tokens(data[cut:]),
        sha256=_sha256(data[:cut], data[cut:]),
        description=f"user file {p.name} ({len(data)} bytes, last {val_fraction:.0%} for validation)",
        files=(str(p),),
    )


class MarkovSource:
    """A random order-k Markov chain over ``alphabet`` symbols (written as bytes 'a', 'b', ...).

    Each of the alphabet**order contexts gets a next-symbol distribution drawn from
    Dirichlet(concentration); the entropy rate H = sum_s pi(s) H(P(.|s)) uses the
    exact stationary distribution pi of the context chain.
    """

    first_byte = ord("a")

    def __init__(self, order: int = 2, alphabet: int = 16, concentration: float = 0.5, seed: int = 0) -> None:
        if not isinstance(order, int) or not 0 <= order <= 6:
            raise ValueError(f"order must be an integer in [0, 6]; got {order!r}")
        if not isinstance(alphabet, int) or not 2 <= alphabet <= 26:
            raise ValueError(f"alphabet must be an integer in [2, 26]; got {alphabet!r}")
        if alphabet**order > 2**20:
            raise ValueError(f"alphabet**order must be at most 2**20 contexts; got {alphabet**order}")
        if not np.isfinite(concentration) or concentration <= 0:
            raise ValueError(f"concentration must be positive and finite; got {concentration!r}")
        self.order, self.alphabet, self.concentration, self.seed = order, alphabet, float(concentration), seed
        rng = np.random.default_rng(seed)
        self.contexts = alphabet**order
        self.transition = rng.dirichlet(np.full(alphabet, concentration), size=self.contexts)
        self.stationary = self._stationary()

    def _next_context(self) -> npt.NDArray[np.int64]:
        s = np.arange(self.contexts)[:, None]
        return (s * self.alphabet + np.arange(self.alphabet)[None, :]) % self.contexts

    def _stationary(self, tol: float = 1e-15, max_iter: int = 100_000) -> npt.NDArray[np.float64]:
        nxt = self._next_context().ravel()
        pi = np.full(self.contexts, 1.0 / self.contexts)
        for _ in range(max_iter):
            weights = (pi[:, None] * self.transition).ravel()
            new = np.asarray(np.bincount(nxt, weights=weights, minlength=self.contexts), dtype=np.float64)
            new /= new.sum()
            if np.abs(new - pi).sum() < tol:
                return new
            pi = new
        raise RuntimeError("the context chain did not reach its stationary distribution")

    @property
    def entropy_rate(self) -> float:
        """H = sum_s pi(s) * (-sum_a P(a|s) ln P(a|s)), nats per symbol."""
        return float(self.stationary @ special.entr(self.transition).sum(axis=1))

    def sample(self, length: int, seed: int) -> U8:
        """``length`` symbols as bytes, starting from a context drawn from pi."""
        if not isinstance(length, int) or length < 1:
            raise ValueError(f"length must be a positive integer; got {length!r}")
        rng = np.random.default_rng(seed)
        cdf = np.cumsum(self.transition, axis=1)
        cdf[:, -1] = 1.0
        uniforms = rng.random(length)
        state = int(rng.choice(self.contexts, p=self.stationary))
        out = np.empty(length, dtype=np.int64)
        for t in range(length):
            a = int(np.searchsorted(cdf[state], uniforms[t], side="right"))
            out[t] = a
            state = (state * self.alphabet + a) % self.contexts
        return (out + self.first_byte).astype(np.uint8)

    def nll(self, tokens: U8) -> npt.NDArray[np.float64]:
        """-ln P(x_t | previous ``order`` symbols) for t >= order: the true model's per-token loss."""
        sym = np.asarray(tokens, dtype=np.int64) - self.first_byte
        if sym.size <= self.order or np.any(sym < 0) or np.any(sym >= self.alphabet):
            raise ValueError("tokens must be longer than the order and use only the source's symbols")
        ctx = np.zeros(sym.size - self.order, dtype=np.int64)
        for j in range(self.order):
            ctx = ctx * self.alphabet + sym[j : sym.size - self.order + j]
        return -np.log(self.transition[ctx, sym[self.order :]])

    def corpus(self, train_tokens: int, val_tokens: int) -> Corpus:
        """Independent train and validation samples; ``extra['val_true_loss']`` is the true model's loss on val."""
        train = self.sample(train_tokens, seed=self.seed * 2 + 1)
        val = self.sample(val_tokens, seed=self.seed * 2 + 2)
        true = self.nll(val)
        return Corpus(
            name=f"markov-o{self.order}-a{self.alphabet}",
            train=train,
            val=val,
            sha256=_sha256(train.tobytes(), val.tobytes()),
            description=(
                f"order-{self.order} Markov chain on {self.alphabet} symbols, Dirichlet({self.concentration:g}) "
                f"transitions, seed {self.seed}"
            ),
            entropy_rate=self.entropy_rate,
            extra={
                "val_true_loss": float(true.mean()),
                "val_true_loss_se": float(true.std(ddof=1) / np.sqrt(true.size)),
            },
        )


# Text for gpu runs, which would repeat the standard-library corpus many times: the Python sources of pure-Python
# packages pinned in requirements.txt (py3-none-any wheels, the same bytes on every platform), about 46 MB.
PINNED_SOURCES: tuple[tuple[str, str], ...] = (
    ("sympy", "1.14.0"), ("networkx", "3.6.1"), ("Pygments", "2.21.0"), ("Sphinx", "7.4.7"), ("ipython", "9.18.1"),
    ("mpmath", "1.3.0"), ("docutils", "0.21.2"),
)
PINNED_CORPUS_PATH = "_build/corpus/pinned-sources.txt"  # relative to the repository root, where campaigns run
PINNED_CORPUS_SHA256 = "0e2572f991d2cb123088648502af39429196cf22d07abfb203620762a4f51ab9"  # 45,801,987 bytes


def pinned_source_files(sources: tuple[tuple[str, str], ...] = PINNED_SOURCES) -> list[tuple[str, Path]]:
    """("dist-version/path", file) of every .py file of the pinned distributions, in the order of SHA-256 of the
    name (a fixed shuffle, so that the last 10% held out by file_corpus samples every package)."""
    import importlib.metadata as md

    out = []
    for name, version in sources:
        try:
            dist = md.distribution(name)
        except md.PackageNotFoundError:
            raise CorpusError(f"the pinned-sources corpus needs {name}=={version}, which is not installed "
                              f"(pip install {name}=={version})") from None
        if dist.version != version:
            raise CorpusError(f"the pinned-sources corpus needs {name}=={version}; this environment has "
                              f"{dist.version} (pip install {name}=={version}, or copy the corpus file made elsewhere)")
        for f in dist.files or ():
            if str(f).endswith(".py"):
                out.append((f"{name}-{version}/{f}", Path(str(f.locate()))))
    return sorted(out, key=lambda item: hashlib.sha256(item[0].encode()).hexdigest())


def pinned_corpus_bytes(sources: tuple[tuple[str, str], ...] = PINNED_SOURCES) -> bytes:
    """The pinned-sources corpus: each file's UTF-8 text after a line naming it; files that are not UTF-8 text, or
    hold NUL bytes, are left out."""
    parts = []
    for label, path in pinned_source_files(sources):
        data = path.read_bytes()
        if b"\x00" in data:
            continue
        try:
            data.decode("utf-8")
        except UnicodeDecodeError:
            continue
        parts.append(f"# ---- {label} ----\n".encode() + data + (b"" if data.endswith(b"\n") else b"\n"))
    return b"".join(parts)


def ensure_pinned_corpus(path: str | os.PathLike[str] = PINNED_CORPUS_PATH,
                         expected_sha256: str | None = PINNED_CORPUS_SHA256) -> Path:
    """The pinned-sources corpus file at ``path``, written (atomically) when missing; its SHA-256 must equal
    ``expected_sha256`` (None: any), else CorpusError."""
    p = Path(path)
    if p.is_file():
        data = p.read_bytes()
    else:
        data = pinned_corpus_bytes()
        p.parent.mkdir(parents=True, exist_ok=True)
        tmp = p.with_name(p.name + f".{os.getpid()}.tmp")
        tmp.write_bytes(data)
        os.replace(tmp, p)
    digest = hashlib.sha256(data).hexdigest()
    if expected_sha256 is not None and digest != expected_sha256:
        raise CorpusError(f"corpus file {str(p)!r} has SHA-256 {digest[:16]}..., not the pinned sources' "
                          f"{expected_sha256[:16]}...: remove it to rebuild it from the pinned packages")
    return p


def prepare_corpus(cfg: object) -> None:
    """Build the pinned-sources corpus when ``cfg.corpus_file`` names it and it is missing (run before a trial or an
    assembly reads it)."""
    if getattr(cfg, "corpus_file", None) == PINNED_CORPUS_PATH:
        ensure_pinned_corpus()


# --- windows of a token stream, as the trainer and the evaluations draw them ---------------------------------------

IGNORE_INDEX = -100  # a target that is not scored (F.cross_entropy's ignore_index)
BatchSource = Callable[[int, torch.Generator], tuple[torch.Tensor, torch.Tensor]]  # (batch, generator) -> (x, y)


def random_windows(
    tokens: npt.NDArray[np.uint8] | torch.Tensor, ctx: int, batch: int, generator: torch.Generator
) -> tuple[torch.Tensor, torch.Tensor]:
    """A batch of (input, next-token target) windows of length ``ctx`` at random offsets."""
    size = int(tokens.shape[0])
    if size < ctx + 2:
        raise ValueError(f"need more than ctx + 1 = {ctx + 1} tokens; got {size}")
    starts = torch.randint(0, size - ctx - 1, (batch,), generator=generator)
    data = tokens if isinstance(tokens, torch.Tensor) else torch.from_numpy(tokens)
    win = data[starts[:, None] + torch.arange(ctx + 1)[None, :]].long()
    return win[:, :-1], win[:, 1:]


def fixed_windows(tokens: npt.NDArray[np.uint8], ctx: int, count: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """``count`` evenly spaced, non-overlapping validation windows; also returns each target's index in ``tokens``."""
    usable = (tokens.size - 1) // ctx
    if usable < 1:
        raise ValueError(f"need at least ctx + 1 = {ctx + 1} tokens; got {tokens.size}")
    count = min(count, usable)
    starts = (np.arange(count) * (usable // count)) * ctx
    idx = starts[:, None] + np.arange(ctx + 1)[None, :]
    win = torch.from_numpy(tokens.astype(np.int64)[idx])
    return win[:, :-1], win[:, 1:], torch.from_numpy(idx[:, 1:])
