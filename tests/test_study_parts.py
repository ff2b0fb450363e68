"""Discovery of each study's optional modules: the published rows and the ledger notes."""

import pytest

from analysis.studies.parts import study_parts


def test_every_study_with_such_a_module_is_found_in_chapter_order():
    notes = [chapter for chapter, _ in study_parts("notes")]
    assert notes == sorted(notes) and {"flash", "softmax_scale", "widening"} <= set(notes)
    assert all(module.__name__ == f"analysis.studies.{c}.published" for c, module in study_parts("published"))
    assert study_parts("no_such_part") == []


def test_an_error_inside_a_study_module_is_raised_not_taken_for_its_absence(monkeypatch):
    from analysis.studies import parts

    def broken(name):  # the module exists, but a package it imports does not
        raise ModuleNotFoundError("No module named 'missing_dependency'", name="missing_dependency")

    monkeypatch.setattr(parts.importlib, "import_module", broken)
    with pytest.raises(ModuleNotFoundError, match="missing_dependency"):
        study_parts("notes")


def test_a_part_must_be_a_module_name():
    with pytest.raises(ValueError, match="part must be a module name"):
        study_parts("../x")
