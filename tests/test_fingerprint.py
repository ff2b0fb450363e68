"""Code fingerprints follow computations, not prose, and are the same under every Python version; config
fingerprints follow values."""

import functools

import pytest

from analysis.core import fingerprint as fp


def _patched(monkeypatch, module: str, name: str) -> None:
    """Make definition ``name`` of ``module`` read as changed code."""
    real = fp._parsed.__wrapped__

    @functools.cache  # as the real one is: the closure walk reads each module many times
    def patched(mod_name):
        mod = real(mod_name)
        if mod_name != module:
            return mod
        tokens, refs = mod.defs[name]
        return fp._Module({**mod.defs, name: (tokens + "\nNAME changed", refs)}, mod.rest, mod.aliases)

    fp._parsed.cache_clear()
    monkeypatch.setattr(fp, "_parsed", patched)


def test_code_fingerprint_follows_the_definitions_the_data_depends_on(monkeypatch):
    base = fp.code_fingerprint("analysis.studies.deep_gau.experiments.deep_gau")
    assert len(base) == 16 and base == fp.code_fingerprint("analysis.studies.deep_gau.experiments.deep_gau")
    _patched(monkeypatch, "analysis.models.gau", "GAU")  # reached: run_trial -> LanguageModel -> GAU
    assert fp.code_fingerprint("analysis.studies.deep_gau.experiments.deep_gau") != base
    monkeypatch.undo()
    fp._parsed.cache_clear()
    for module, name in [("analysis.studies.deep_gau.experiments.deep_gau", "claims"), ("analysis.studies.deep_gau.experiments.deep_gau", "trial_plan"),
                         ("analysis.core.experiment", "config_for")]:  # the claims, the plan, code the trials do not call
        _patched(monkeypatch, module, name)
        assert fp.code_fingerprint("analysis.studies.deep_gau.experiments.deep_gau") == base, name
        monkeypatch.undo()
    fp._parsed.cache_clear()


def test_closure_resolves_module_attributes_and_imports_inside_functions():
    closure = fp.code_closure("analysis.studies.gau_init.experiments.gau_init")
    assert ("analysis.theory.gau_init", "gau_output_rms") in closure  # read as th.gau_output_rms
    assert ("analysis.studies.gau_init.experiments.gau_init", "claims") not in closure
    deep = fp.code_closure("analysis.studies.deep_gau.experiments.deep_gau")
    assert ("analysis.tasks.data", "file_corpus") in deep  # imported inside base.corpus_of
    assert ("analysis.core.experiment", "corpus_of") in deep


def test_fingerprint_names_definitions_not_modules(monkeypatch):
    """Moving a definition to another module (a study's package, say) leaves every fingerprint unchanged."""
    base = fp.code_fingerprint("analysis.studies.deep_gau.experiments.deep_gau")
    real = fp.code_closure
    monkeypatch.setattr(fp, "code_closure", lambda *a: {(f"moved.{m}", n): t for (m, n), t in real(*a).items()})
    assert fp.code_fingerprint("analysis.studies.deep_gau.experiments.deep_gau") == base


def test_docstrings_comments_and_layout_do_not_count():
    a = fp.source_tokens('def f():\n    """one"""\n    return 1\n')
    b = fp.source_tokens('def f():\n    """two"""\n\n    return 1  # a comment\n')
    c = fp.source_tokens("def f():\n    return 2\n")
    d = fp.source_tokens("def f( ):\n    return 1\n\n\n")
    assert a == b == d != c
    # a string that is an expression, not a statement, counts
    assert fp.source_tokens('x = "one"\n') != fp.source_tokens('x = "two"\n')


def test_an_import_does_not_count_wherever_it_stands():
    """Moving a module changes its importers' import lines only: a function that imports inside itself keeps its
    tokens, so moving a module moves no record; a change of what the function does still counts."""
    a = fp.source_tokens("def f():\n    from analysis.tasks.data import load\n    return load(1)\n")
    b = fp.source_tokens("def f():\n    from analysis.tasks.data import load  # moved\n    return load(1)\n")
    c = fp.source_tokens("def f():\n    import analysis.tasks.data as d, os\n    return load(1)\n")
    changed = fp.source_tokens("def f():\n    from analysis.tasks.data import load\n    return load(2)\n")
    assert a == b == c != changed
    # 'from' that is not an import still counts
    assert "NAME from" in fp.source_tokens("def g(x):\n    raise ValueError(x) from None\n")
    assert "NAME from" in fp.source_tokens("def g(x):\n    yield from x\n")


def test_tokens_are_pinned():
    """The token text of a snippet with f-strings, as Python 3.11 gives it. Python 3.12 tokenizes f-strings into
    parts, which are joined back: the same text must come out there, or fingerprints differ between versions."""
    src = 'def f(a, w):\n    """doc"""\n    return f"{a!r:>{w}}" + f\'{a}\'  # note\n'
    assert fp.source_tokens(src) == "\n".join([
        "NAME def", "NAME f", "OP (", "NAME a", "OP ,", "NAME w", "OP )", "OP :", "NEWLINE", "INDENT",
        "NAME return", 'STRING f"{a!r:>{w}}"', "OP +", "STRING f'{a}'", "NEWLINE", "DEDENT"])


def test_config_fingerprint_and_differences():
    assert fp.config_fingerprint({"a": 1, "b": (1, 2)}) == fp.config_fingerprint({"b": [1, 2], "a": 1})
    assert fp.config_fingerprint({"a": 1}) != fp.config_fingerprint({"a": 2})
    assert fp.config_differences({"a": 1, "b": 2}, {"a": 1, "b": 3, "c": 0}) == ["b: 2 → 3", "c: none → 0"]
    assert fp.config_differences({"s": [0, 1], "f": "x.txt", "t": True, "d": {"k": 2}},
                                 {"s": [0, 1, 2], "f": None, "t": False, "d": {"k": 3}}) == [
        "d: (k 2) → (k 3)", "f: x.txt → none", "s: (0, 1) → (0, 1, 2)", "t: true → false"]
    with pytest.raises(ValueError, match="module of the analysis package"):
        fp.code_fingerprint("numpy")


def test_from_package_import_resolves_the_package_and_the_module():
    """``from analysis.models import widening`` names the package (its __init__) and analysis.models.widening."""
    assert fp._module_path("analysis") == fp.PACKAGE_ROOT / "__init__.py"
    assert fp._module_path("analysis.models.widening") == fp.PACKAGE_ROOT / "models" / "widening.py"
    assert len(fp.code_fingerprint("analysis.studies.widening.experiments.widening")) == 16


def test_split_experiments_do_not_depend_on_the_trial_machinery():
    """An experiment split into trials reaches analysis.core.trial only: editing how trials are run or stored
    does not make its records stale."""
    modules = {m for m, _ in fp.code_closure("analysis.studies.gau_trained.experiments.gau_length")}
    assert "analysis.core.trial" in modules
    assert not {"analysis.core.trials", "analysis.core.runner", "analysis.compute.campaign", "analysis.core.results"} & modules
