"""The library's floors, read off its import graph: modules are nodes, imports are edges, folders are floors.

theory, models and tasks are the ground; training, then core (the protocol), then compute (GPU plans and leases),
then studies (one package per chapter), then site (the book's build) and cli on top. Every import runs down, no
module imports another that (directly or not) imports it, and the library imports itself inside a function only
where this file says why.
"""

import ast
from collections import defaultdict
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "analysis"
FLOORS = {"theory": 0, "models": 0, "tasks": 0, "training": 1, "core": 2, "compute": 3, "studies": 4, "site": 5,
          "cli": 6}
# imports inside a function, by (importing module, imported module): the reason each is not at the top
LOCAL_IMPORTS: dict[tuple[str, str], str] = {}


def _module(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {_module(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def floor(module: str) -> str:
    """The folder directly under analysis/ that holds ``module`` ('' for analysis/__init__ and __main__)."""
    parts = module.split(".")
    return parts[1] if len(parts) > 2 or (len(parts) == 2 and parts[1] in FLOORS) else ""


def _targets(module: str, node: ast.Import | ast.ImportFrom) -> list[str]:
    """The library's modules an import statement names (a package's __init__ for ``from pkg import name``)."""
    if isinstance(node, ast.Import):
        names = [a.name for a in node.names]
    else:
        base = node.module or ""
        if node.level:
            package = module.split(".") if MODULES[module].name == "__init__.py" else module.split(".")[:-1]
            base = ".".join(package[: len(package) - node.level + 1] + ([base] if base else []))
        names = [f"{base}.{a.name}" if f"{base}.{a.name}" in MODULES else base for a in node.names]
    return [n for n in names if n in MODULES]


def _imports() -> list[tuple[str, str, bool]]:
    """(importer, imported, inside a function) for every import of the library by itself."""
    out = []
    for module, path in MODULES.items():
        tree = ast.parse(path.read_text())
        inner = {id(sub) for fn in ast.walk(tree) if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef))
                 for sub in ast.walk(fn) if isinstance(sub, (ast.Import, ast.ImportFrom))}
        for node in ast.walk(tree):
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                out += [(module, t, id(node) in inner) for t in _targets(module, node)]
    return out


IMPORTS = _imports()


def test_every_module_sits_on_a_floor():
    loose = [m for m in MODULES if not floor(m) and m not in ("analysis", "analysis.__main__")]
    assert loose == [] and {floor(m) for m in MODULES} - {""} == set(FLOORS)


def test_every_import_runs_down_the_floors():
    up = sorted({(a, b) for a, b, _ in IMPORTS if floor(a) and floor(b) and floor(a) != floor(b)
                 and FLOORS[floor(b)] >= FLOORS[floor(a)]})
    assert up == [], "imports from a floor up to one at or above it: " + "; ".join(f"{a} -> {b}" for a, b in up)


def test_no_module_imports_one_that_imports_it():
    """At the top of modules, where an import runs when the module loads: a cycle there is an import circle."""
    graph = defaultdict(set)
    for a, b, inside in IMPORTS:
        if not inside and a != b:
            graph[a].add(b)
    state: dict[str, int] = {}
    cycles = []

    def visit(node: str, path: list[str]) -> None:
        state[node] = 1
        for nxt in sorted(graph[node]):
            if state.get(nxt) == 1:
                cycles.append(path[path.index(nxt):] + [nxt] if nxt in path else [node, nxt])
            elif nxt not in state:
                visit(nxt, path + [nxt])
        state[node] = 2

    for module in sorted(MODULES):
        if module not in state:
            visit(module, [module])
    assert cycles == []


def test_the_library_imports_itself_inside_a_function_only_where_it_says_why():
    """The command line imports per subcommand, so that `analysis entropy` answers without loading torch; every
    other import of the library inside a function is listed above with its reason, and each listed one exists."""
    local = {(a, b) for a, b, inside in IMPORTS if inside and floor(a) != "cli"}
    assert local == set(LOCAL_IMPORTS)


@pytest.mark.parametrize("module", ["analysis.core.registry", "analysis.core.runner", "analysis.compute.campaign"])
def test_the_protocol_reads_no_gpu_budget_and_no_chapter(module):
    """core imports no compute, site or study module; compute imports no study or site module."""
    below = {floor(b) for a, b, _ in IMPORTS if a == module}
    assert not below & {"site", "studies", "cli"} and (floor(module) != "core" or "compute" not in below)
