"""Printed text fits the column: long lines wrap at spaces with a hanging indent."""

import pytest

from analysis.studies.text import COLUMN_CHARS, and_list, by_verdict, fit_line, fit_text, text_block


def test_long_lines_wrap_with_a_hanging_indent_and_short_ones_stay():
    assert fit_line("short") == ["short"]
    line = "  " + " ".join(f"word{i}" for i in range(40))
    out = fit_line(line)
    assert len(out) > 1 and all(len(x) <= COLUMN_CHARS for x in out)
    assert out[0].startswith("  word0") and all(x.startswith("      ") for x in out[1:])
    assert " ".join(x.strip() for x in out) == line.strip()  # nothing lost
    assert all(len(x) <= 30 for x in fit_line("x" * 100, width=30))  # a word too long is broken
    with pytest.raises(ValueError, match="width must be >= 20"):
        fit_line("x", width=5)


def test_text_block_fences_fitted_lines():
    block = text_block(["a", "b " * 60])
    assert block.startswith("```text\na\n") and block.endswith("\n```")
    assert all(len(x) <= COLUMN_CHARS for x in block.split("\n"))
    assert fit_text("a\nb") == "a\nb"


def test_and_list_writes_an_english_list():
    assert [and_list(x) for x in ([], ["a"], ["a", "b"], ["a", "b", "c"])] == ["", "a", "a and b", "a, b and c"]
    assert and_list(["GAU and FLASH", "RMSNorm"]) == "GAU and FLASH, and RMSNorm"  # no ambiguous 'and'


def test_by_verdict_groups_names_where_each_verdict_first_appears():
    assert by_verdict([("A", "fails"), ("B", "holds"), ("C", "fails")]) == [("fails", ["A", "C"]), ("holds", ["B"])]


def test_sci_keeps_thousands_and_plain_numbers_and_turns_every_minus_true():
    from analysis.studies.text import sci

    assert sci(1234.4) == "1,234" and sci(-1234.4) == "−1,234" and sci(-0.001234) == "−0.00123"
    assert sci(-9.98046875e-07) == "−9.98 × 10⁻⁷" and sci(9.9996e5) == "10⁶"
