"""Fingerprints of what produced a record: its config, and the code its data depends on.

The code fingerprint hashes the source tokens (comments, blank lines, layout and docstrings removed) of every
top-level definition of the package that an experiment's data-making entry points (``trials``, ``run_trial``,
``assemble``, or ``run``) reach by name, directly or not, and of the top-level code of each module reached
(:func:`code_closure`). Editing a computation on that path changes it. Editing prose, or code the data does not
depend on (claims, summaries, figures, plans, the runner), leaves it unchanged, and so does moving a definition to
another module: definitions are hashed by their names, not their modules'. Tokens, unlike syntax-tree dumps, are
the same under every Python version from 3.11 on (3.12 splits an f-string into parts; they are joined back into one
string token), so a trial made on another machine carries a fingerprint this one recomputes. A record stores both
fingerprints; a chapter, ``python -m analysis list`` or ``campaign --status`` compares them with today's to say
whether a record is stale.
"""

from __future__ import annotations

import ast
import hashlib
import io
import json
import tokenize
from dataclasses import dataclass
from functools import cache
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
    """The code of ``source`` as normalised tokens: no comments, blank lines, layout, docstrings or imports.

    A statement that is nothing but a string (a docstring, wherever it stands) is dropped with its NEWLINE, and so
    is an import statement, wherever it stands: the definitions it binds are reached by name.
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
        if at_statement_start and tokens[i] in (("NAME", "import"), ("NAME", "from")):
            # an import, in a function too: what it binds is followed by name, so moving a module moves nothing
            while i < len(tokens) and tokens[i][0] != "NEWLINE":
                i += 1
            i += 1
            continue
        kept.append(tokens[i])
        i += 1
    return "\n".join(f"{kind} {text}" if text else kind for kind, text in kept)


ENTRY_POINTS = ("trials", "run_trial", "assemble", "run", "DATA_VERSION")  # what makes an experiment's data

_Ref = tuple[str | None, str]  # (None, n) for a bare name, (base, attr) for an attribute of a bare name


@dataclass(frozen=True)
class _Module:
    """One module of the package: its top-level definitions, the rest of its top-level code, and its imports."""

    defs: dict[str, tuple[str, frozenset[_Ref]]]  # name -> (normalised tokens, references)
    rest: tuple[str, frozenset[_Ref]]  # statements that define, import or document nothing (run on import)
    aliases: dict[str, tuple[str, str | None]]  # local name -> (module, attribute), attribute None: the module


def _alias_target(module: str, attr: str | None) -> tuple[str, str | None]:
    """(module, None) when ``module.attr`` is itself a module of the package, else (module, attr)."""
    if attr is not None and _module_path(f"{module}.{attr}") is not None:
        return f"{module}.{attr}", None
    return module, attr


def _aliases(tree: ast.AST, module: str) -> dict[str, tuple[str, str | None]]:
    """Every name bound by an import of the package's modules anywhere in ``tree`` (in functions too)."""
    out: dict[str, tuple[str, str | None]] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                if _module_path(a.name) is not None:
                    out[a.asname or a.name.split(".")[0]] = (a.name if a.asname else a.name.split(".")[0], None)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:  # relative import
                parts = module.split(".")[: -node.level]
                base = ".".join(parts + ([base] if base else []))
            if _module_path(base) is not None:
                for a in node.names:
                    out[a.asname or a.name] = _alias_target(base, a.name)
    return out


def _references(node: ast.AST) -> frozenset[_Ref]:
    """The names ``node`` reads, and the attributes it reads of a bare name (``th.f`` gives ("th", "f"))."""
    refs: set[_Ref] = set()
    bases: set[int] = set()
    for sub in ast.walk(node):
        if isinstance(sub, ast.Attribute) and isinstance(sub.value, ast.Name):
            refs.add((sub.value.id, sub.attr))
            bases.add(id(sub.value))
    for sub in ast.walk(node):
        if isinstance(sub, ast.Name) and id(sub) not in bases:
            refs.add((None, sub.id))
    return frozenset(refs)


def _bound_names(node: ast.stmt) -> list[str]:
    """The top-level names a definition or an assignment binds."""
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return [node.name]
    targets = node.targets if isinstance(node, ast.Assign) else [node.target]  # type: ignore[attr-defined]
    return [n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)]


@cache
def _parsed(name: str) -> _Module:
    path = _module_path(name)
    assert path is not None
    source = path.read_text()
    tree = ast.parse(source, filename=str(path))
    lines = source.splitlines(keepends=True)
    defs: dict[str, tuple[str, frozenset[_Ref]]] = {}
    rest_tokens: list[str] = []
    rest_refs: set[_Ref] = set()
    for node in tree.body:
        first = min([node.lineno] + [d.lineno for d in getattr(node, "decorator_list", [])])
        text = source_tokens("".join(lines[first - 1 : node.end_lineno]))
        if isinstance(node, (ast.Import, ast.ImportFrom)) or not text:  # imports are resolved, docstrings dropped
            continue
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Assign, ast.AnnAssign)):
            for bound in _bound_names(node):
                defs[bound] = (text, _references(node))
        else:
            rest_tokens.append(text)
            rest_refs |= _references(node)
    return _Module(defs, ("\n".join(rest_tokens), frozenset(rest_refs)), _aliases(tree, name))


def _resolve(module: str, name: str, depth: int = 0) -> tuple[str, str | None] | None:
    """Where ``name`` as read in ``module`` is defined: (module, definition), (module, None) for a whole module,
    or None when it is not the package's (a builtin, a local variable, a third-party name)."""
    mod = _parsed(module)
    if name in mod.defs:
        return module, name
    if name in mod.aliases and depth < 20:
        target, attr = mod.aliases[name]
        return (target, None) if attr is None else _resolve(target, attr, depth + 1)
    return None


def code_closure(module: str, entry: tuple[str, ...] = ENTRY_POINTS) -> dict[tuple[str, str], str]:
    """The normalised tokens of every top-level definition of the package that ``entry`` of ``module`` reaches by
    name (functions, classes, assignments; a module read as a whole brings all of its), and of the top-level code of
    each module reached ("" as the definition), keyed by (module, definition)."""
    if _module_path(module) is None:
        raise ValueError(f"module must be a module of the {PACKAGE} package; got {module!r}")
    out: dict[tuple[str, str], str] = {}
    todo: list[tuple[str, str | None]] = [(module, e) for e in entry if e in _parsed(module).defs]
    while todo:
        mod_name, def_name = todo.pop()
        mod = _parsed(mod_name)
        if (mod_name, "") not in out:  # the module's own top-level code runs when it is imported
            out[(mod_name, "")] = mod.rest[0]
            todo.extend(_targets(mod_name, mod.rest[1]))
        names = list(mod.defs) if def_name is None else [def_name]
        for name in names:
            if (mod_name, name) in out:
                continue
            tokens, refs = mod.defs[name]
            out[(mod_name, name)] = tokens
            todo.extend(_targets(mod_name, refs))
    return out


def _targets(module: str, refs: frozenset[_Ref]) -> list[tuple[str, str | None]]:
    """The definitions (or whole modules) that ``refs``, read in ``module``, name."""
    out: list[tuple[str, str | None]] = []
    for base, attr in refs:
        if base is None:
            hit = _resolve(module, attr)
            if hit is not None:
                out.append(hit)
            continue
        hit = _resolve(module, base)
        if hit is None:
            continue
        if hit[1] is None:  # an attribute of a module: that definition of it
            inner = _resolve(hit[0], attr)
            out.append(inner if inner is not None else hit)
        else:
            out.append(hit)
    return out


def code_fingerprint(module: str, entry: tuple[str, ...] = ENTRY_POINTS) -> str:
    """SHA-256 (first 16 hex digits) over the normalised tokens of :func:`code_closure`, named by definition only:
    moving a definition to another module leaves it unchanged; editing code the data does not depend on (claims,
    summaries, figures, plans) too."""
    # a module's own top-level code counts when it has any: an empty one would count where a definition lives
    pieces = sorted(f"{name}\0{tokens}" for (_, name), tokens in code_closure(module, entry).items()
                    if name or tokens)
    h = hashlib.sha256()
    for piece in pieces:
        h.update(piece.encode())
        h.update(b"\1")
    return h.hexdigest()[:16]


def config_fingerprint(config: dict[str, Any]) -> str:
    """SHA-256 (first 16 hex digits) of the config as canonical JSON."""
    return hashlib.sha256(json.dumps(config, sort_keys=True, default=str).encode()).hexdigest()[:16]


def config_differences(old: dict[str, Any], new: dict[str, Any]) -> list[str]:
    """The top-level fields whose values differ between two config dicts, as 'field: old → new', each value as a
    reader writes it (none, a word, numbers separated by commas)."""
    def norm(v: Any) -> Any:
        return json.loads(json.dumps(v, default=str))

    def plain(v: Any) -> str:
        if v is None:
            return "none"
        if isinstance(v, bool):
            return "true" if v else "false"
        if isinstance(v, list):
            return "(" + ", ".join(plain(x) for x in v) + ")" if v else "()"
        if isinstance(v, dict):
            return "(" + ", ".join(f"{k} {plain(x)}" for k, x in v.items()) + ")"
        return str(v)

    out = []
    for key in sorted(set(old) | set(new)):
        a, b = norm(old.get(key)), norm(new.get(key))
        if a != b:
            out.append(f"{key}: {plain(a)} → {plain(b)}")
    return out
