"""The verdict changelog reads the verdict table's git history: flips, additions, removals and moved values."""

import json
import subprocess

from analysis.site.changelog import Change, changelog_html, diff_tables, history


def _table(**claims):
    return {"schema": "analysis.verdicts/1", "measured_rtol": 1e-9, "measured_atol": 1e-12,
            "records": {"exp.cpu": {k: {"verdict": v, "corrected_verdict": c, "measured": m}
                                    for k, (v, c, m) in claims.items()}}}


def _commit(repo, table, message):
    (repo / "tests").mkdir(exist_ok=True)
    (repo / "tests" / "verdicts.json").write_text(json.dumps(table))
    subprocess.run(["git", "-C", str(repo), "add", "-A"], check=True)
    subprocess.run(["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", message],
                   check=True)


def test_diff_reads_old_keys_and_separates_flips_from_moved_values():
    old = _table(**{"a-recorded-cpu": ("holds", None, 1.0), "b": ("fails", None, 2.0), "c": ("holds", None, 3.0)})
    new = _table(a=("fails", "holds", 1.0), b=("fails", None, 2.5), d=("holds", None, 4.0))
    changes, moved = diff_tables(old, new)
    assert changes == (Change("exp.cpu", "a", "holds", "fails", None, "holds"),
                       Change("exp.cpu", "c", "holds", None, None, None),
                       Change("exp.cpu", "d", None, "holds", None, None))
    assert moved == 1  # b's value moved, its verdict did not
    assert diff_tables(None, new)[0] == tuple(Change("exp.cpu", k, None, v, None, c)
                                              for k, (v, c) in (("a", ("fails", "holds")), ("b", ("fails", None)),
                                                                ("d", ("holds", None))))


def test_history_lists_each_commit_with_its_reason(tmp_path):
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    _commit(tmp_path, _table(a=("holds", None, 1.0)), "first table")
    (tmp_path / "other.txt").write_text("x")
    _commit(tmp_path, _table(a=("holds", None, 1.0)), "unrelated change")  # only other.txt changed: not a revision of the table
    _commit(tmp_path, _table(a=("fails", None, 1.5)), "a fails now\n\nbecause the record was re-made")
    revisions = history(tmp_path)
    assert [r.message.split("\n")[0] for r in revisions] == ["first table", "a fails now"]
    assert len(revisions[0].added) == 1 and revisions[1].flips == (Change("exp.cpu", "a", "holds", "fails"),)
    page = changelog_html(revisions, {("exp", "a"): ("chapter.3", "ledger.html#chapter-a")})
    assert page.index("a fails now") < page.index("first table")  # newest first
    assert "1 verdict changed" in page and "because the record was re-made" in page
    assert "2 commits changed the verdict table; 1 verdict of existing claims changed" in page
    assert "1 claim added (1 holds)" in page
    # one line per verdict change: the claim's id linked to the ledger, before and after, the reason, the commit
    row = page[page.index('<table class="claims-table changelog-flips">'):].split("</tr>")[1]
    assert '<a href="ledger.html#chapter-a">chapter.3</a>' in row and "holds → fails" in row
    assert "<td>a fails now because the record was re-made</td>" in row and revisions[1].commit[:8] in row
    assert "no longer in the book" in changelog_html(revisions)  # without the link: the claim's key, said so


def test_the_reason_is_the_sentence_that_names_the_claim():
    from analysis.site.changelog import REASON_WORDS, reason

    message = ("flash-bench rerun; the table moves on purpose: quad-a goes from fails to inconclusive, because a CPU "
               "cannot decide it. Other values unchanged")
    assert reason(message, "quad-a") == ("the table moves on purpose: quad-a goes from fails to inconclusive, "
                                         "because a CPU cannot decide it.")
    assert reason(message, "other") == "flash-bench rerun"  # no sentence names it: the first
    assert reason("quad-a-b moves; quad-a stays", "quad-a") == "quad-a stays"  # not a longer key it begins
    long = " ".join(["word"] * (REASON_WORDS + 5))
    assert reason(long, "x").endswith("…") and len(reason(long, "x").split()) == REASON_WORDS
    assert reason("", "x") == ""


def test_without_git_history_the_page_says_so(tmp_path):
    assert history(tmp_path) is None
    assert "No git history is available" in changelog_html(None)
    assert "no committed history" in changelog_html([])


def test_added_claims_are_counted_as_verbs_in_verdict_order():
    from analysis.site.changelog import _counts

    added = tuple(Change("e.cpu", k, None, v) for k, v in (("a", "holds"), ("b", "fails"), ("c", "holds")))
    assert _counts(added, new=True) == "2 hold, 1 fails"
