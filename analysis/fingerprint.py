"""Fingerprints of what produced a record: its config, and the code of its experiment.

The code fingerprint hashes the syntax tree (comments and docstrings removed) of the
experiment's module and of every ``analysis`` module it imports, directly or not,
so editing prose leaves it unchanged and editing any computation on the path
changes it. A record stores both; a chapter or ``python -m analysis list`` compares
them with today's to say whether a record is stale.
"""

from __future__ import annotations

import ast
import hashlib
import json
from functools import lru_cache
from pathlib import Path
from typing import Any

PACKAGE_ROOT = Path(__file__).resolve().parent
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


def _strip_docstrings(tree: ast.AST) -> ast.AST:
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            body = node.body
            first = body[0].value if body and isinstance(body[0], ast.Expr) else None
            if isinstance(first, ast.Constant) and isinstance(first.value, str):
                node.body = body[1:] or [ast.Pass()]
    return tree


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
    tree = ast.parse(path.read_text(), filename=str(path))
    imports = frozenset(_imports(tree, name) - {name})
    return ast.dump(_strip_docstrings(tree), include_attributes=False), imports


def code_fingerprint(module: str) -> str:
    """SHA-256 (first 16 hex digits) over the docstring-free syntax of ``module`` and its package imports."""
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
