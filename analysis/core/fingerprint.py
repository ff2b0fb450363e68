"""Fingerprints of what produced a record: its config, and the code of its experiment.

The code fingerprint hashes the source tokens (comments, blank lines, layout and docstrings
removed) of the experiment's module and of every ``analysis`` module it imports, directly
or not, so editing prose leaves it unchanged and editing any computation on the path
changes it. Tokens, unlike syntax-tree dumps, are the same under every Python version
from 3.11 on (3.12 splits an f-string into parts; they are joined back into one string
token), so a trial made on another machine carries a fingerprint this one recomputes. A
record stores both fingerprints; a chapter or ``python -m analysis list`` compares them
with today's to say whether a record is stale.
"""

from __future__ import annotations

import ast
import hashlib
import io
import json
import tokenize
from functools import lru_cache
from pathlib import Path
from typing import Any

PACKAGE_ROOT = Path(__file__).resolve().parent.parent
PACKAGE = "analysis"


def _module_path(name: str) -> Path | None:
    """The source file of module ``analysis.x.y`` (None when it is not a module of the package)."""
    if name != PACKAGE and not name.startswith(PACKAGE + "."):
        return None
    parts = name.split(".")[1:]
    if not parts:  # the package itself (``from analysis import x``)
        return PACKAGE_ROOT / "__init__.py"
    rel = Path(*parts)
    for candidate in (PACKAGE_ROOT / rel.with_suffix(".py"), PACKAGE_ROOT / rel / "__init__.py"):
        if candidate.is_file():
            return candidate
    return None


_DROPPED = {tokenize.COMMENT, tokenize.NL, tokenize.ENCODING, tokenize.ENDMARKER}
_MARKERS = {tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT}  # kept by type only: their text is layout
_FSTRING_START = getattr(tokenize, "FSTRING_START", None)  # Python >= 3.12
_FSTRING_END = getattr(tokenize, "FSTRING_END", None)


def _merged_tokens(source: str) -> list[tuple[str, str]]:
    """(type name, text) of each token, an f-string always one STRING token whatever the Python version."""
    lines = source.splitlines(keepends=True)
    offsets = [0]
    for line in lines:
        offsets.append(offsets[-1] + len(line))

    def at(pos: tuple[int, int]) -> int:
        return offsets[pos[0] - 1] + pos[1]

    out: list[tuple[str, str]] = []
    depth, start = 0, (0, 0)
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        if tok.type == _FSTRING_START:
            if depth == 0:
                start = tok.start
            depth += 1
        elif tok.type == _FSTRING_END:
            depth -= 1
            if depth == 0:
                out.append(("STRING", source[at(start) : at(tok.end)]))
        elif depth == 0 and tok.type not in _DROPPED:
            out.append((tokenize.tok_name[tok.type], "" if tok.type in _MARKERS else tok.string))
    return out


def source_tokens(source: str) -> str:
    """The code of ``source`` as normalised tokens: no comments, blank lines, layout or docstrings.

    A statement that is nothing but a string (a docstring, wherever it stands) is dropped with its NEWLINE.
    """
    tokens = _merged_tokens(source)
    kept: list[tuple[str, str]] = []
    i = 0
    while i < len(tokens):
        at_statement_start = not kept or kept[-1][0] in ("NEWLINE", "INDENT", "DEDENT")
        j = i
        while j < len(tokens) and tokens[j][0] == "STRING":
            j += 1
        if at_statement_start and j > i and j < len(tokens) and tokens[j][0] == "NEWLINE":
            i = j + 1  # a bare string statement
            continue
        kept.append(tokens[i])
        i += 1
    return "\n".join(f"{kind} {text}" if text else kind for kind, text in kept)


def _imports(tree: ast.AST, module: str) -> set[str]:
    """Names of the package's modules imported anywhere in ``tree`` (``from analysis.x import y`` gives x and x.y)."""
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:  # relative import
                parts = module.split(".")[: -node.level]
                base = ".".join(parts + ([base] if base else []))
            found.add(base)
            found.update(f"{base}.{a.name}" for a in node.names)
    return {n for n in found if _module_path(n) is not None}


@lru_cache(maxsize=None)
def _parsed(name: str) -> tuple[str, frozenset[str]]:
    path = _module_path(name)
    assert path is not None
    source = path.read_text()
    imports = frozenset(_imports(ast.parse(source, filename=str(path)), name) - {name})
    return source_tokens(source), imports


def code_fingerprint(module: str) -> str:
    """SHA-256 (first 16 hex digits) over the normalised tokens of ``module`` and of its package imports."""
    if _module_path(module) is None:
        raise ValueError(f"module must be a module of the {PACKAGE} package; got {module!r}")
    seen: dict[str, str] = {}
    todo = [module]
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        dump, imports = _parsed(name)
        seen[name] = dump
        todo.extend(imports)
    h = hashlib.sha256()
    for name in sorted(seen):
        h.update(name.encode())
        h.update(seen[name].encode())
    return h.hexdigest()[:16]


def config_fingerprint(config: dict[str, Any]) -> str:
    """SHA-256 (first 16 hex digits) of the config as canonical JSON."""
    return hashlib.sha256(json.dumps(config, sort_keys=True, default=str).encode()).hexdigest()[:16]


def config_differences(old: dict[str, Any], new: dict[str, Any]) -> list[str]:
    """The top-level fields whose values differ between two config dicts, as 'field: old -> new'."""
    def norm(v: Any) -> Any:
        return json.loads(json.dumps(v, default=str))
    out = []
    for key in sorted(set(old) | set(new)):
        a, b = norm(old.get(key)), norm(new.get(key))
        if a != b:
            out.append(f"{key}: {a!r} -> {b!r}")
    return out
