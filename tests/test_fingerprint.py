"""Code fingerprints follow computations, not prose; config fingerprints follow values."""

import pytest

from analysis import fingerprint as fp


def test_code_fingerprint_covers_imports_and_ignores_docstrings(monkeypatch):
    base = fp.code_fingerprint("analysis.experiments.deep_gau")
    assert len(base) == 16 and base == fp.code_fingerprint("analysis.experiments.deep_gau")
    real = fp._parsed.__wrapped__

    def patched(name):
        dump, imports = real(name)
        return (dump + "changed" if name == "analysis.models.gau" else dump), imports

    fp._parsed.cache_clear()
    monkeypatch.setattr(fp, "_parsed", patched)
    assert fp.code_fingerprint("analysis.experiments.deep_gau") != base  # a module it imports changed
    assert fp.code_fingerprint("analysis.experiments.ffn_basics") == fp.code_fingerprint("analysis.experiments.ffn_basics")


def test_docstrings_do_not_count():
    import ast

    a = ast.dump(fp._strip_docstrings(ast.parse('def f():\n    """one"""\n    return 1\n')))
    b = ast.dump(fp._strip_docstrings(ast.parse('def f():\n    """two"""\n    return 1  # a comment\n')))
    c = ast.dump(fp._strip_docstrings(ast.parse('def f():\n    return 2\n')))
    assert a == b != c


def test_config_fingerprint_and_differences():
    assert fp.config_fingerprint({"a": 1, "b": (1, 2)}) == fp.config_fingerprint({"b": [1, 2], "a": 1})
    assert fp.config_fingerprint({"a": 1}) != fp.config_fingerprint({"a": 2})
    assert fp.config_differences({"a": 1, "b": 2}, {"a": 1, "b": 3, "c": 0}) == ["b: 2 -> 3", "c: None -> 0"]
    with pytest.raises(ValueError, match="module of the analysis package"):
        fp.code_fingerprint("numpy")


def test_from_package_import_resolves_the_package_and_the_module():
    """``from analysis import widening`` names the package (its __init__) and analysis.widening."""
    from analysis.fingerprint import PACKAGE_ROOT, _module_path, code_fingerprint

    assert _module_path("analysis") == PACKAGE_ROOT / "__init__.py"
    assert _module_path("analysis.widening") == PACKAGE_ROOT / "widening.py"
    assert len(code_fingerprint("analysis.experiments.widening")) == 16
