"""Code fingerprints follow computations, not prose, and are the same under every Python version; config
fingerprints follow values."""

import pytest

from analysis.core import fingerprint as fp


def test_code_fingerprint_covers_imports_and_ignores_docstrings(monkeypatch):
    base = fp.code_fingerprint("analysis.experiments.deep_gau")
    assert len(base) == 16 and base == fp.code_fingerprint("analysis.experiments.deep_gau")
    real = fp._parsed.__wrapped__

    def patched(name):
        tokens, imports = real(name)
        return (tokens + "changed" if name == "analysis.models.gau" else tokens), imports

    fp._parsed.cache_clear()
    monkeypatch.setattr(fp, "_parsed", patched)
    assert fp.code_fingerprint("analysis.experiments.deep_gau") != base  # a module it imports changed
    assert fp.code_fingerprint("analysis.experiments.ffn_basics") == fp.code_fingerprint("analysis.experiments.ffn_basics")


def test_docstrings_comments_and_layout_do_not_count():
    a = fp.source_tokens('def f():\n    """one"""\n    return 1\n')
    b = fp.source_tokens('def f():\n    """two"""\n\n    return 1  # a comment\n')
    c = fp.source_tokens("def f():\n    return 2\n")
    d = fp.source_tokens("def f( ):\n    return 1\n\n\n")
    assert a == b == d != c
    # a string that is an expression, not a statement, counts
    assert fp.source_tokens('x = "one"\n') != fp.source_tokens('x = "two"\n')


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
    assert fp.config_differences({"a": 1, "b": 2}, {"a": 1, "b": 3, "c": 0}) == ["b: 2 -> 3", "c: None -> 0"]
    with pytest.raises(ValueError, match="module of the analysis package"):
        fp.code_fingerprint("numpy")


def test_from_package_import_resolves_the_package_and_the_module():
    """``from analysis import widening`` names the package (its __init__) and analysis.widening."""
    assert fp._module_path("analysis") == fp.PACKAGE_ROOT / "__init__.py"
    assert fp._module_path("analysis.widening") == fp.PACKAGE_ROOT / "widening.py"
    assert len(fp.code_fingerprint("analysis.experiments.widening")) == 16


def test_split_experiments_do_not_depend_on_the_trial_machinery():
    """An experiment split into trials imports analysis.core.trial only: editing how trials are run or stored
    does not make its records stale."""
    seen, todo = set(), ["analysis.experiments.gau_length"]
    while todo:
        name = todo.pop()
        if name not in seen:
            seen.add(name)
            todo.extend(fp._parsed(name)[1])
    assert "analysis.core.trial" in seen
    assert not {"analysis.core.trials", "analysis.core.runner", "analysis.core.campaign", "analysis.results"} & seen
