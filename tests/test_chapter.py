"""open_chapter: live run, recorded runs with staleness, claims and GPU status in one call."""

import dataclasses

import pytest

from analysis.studies.chapter import open_chapter, runs_for
from analysis.core.registry import EXPERIMENTS, config_for, fingerprint
from analysis.core.runner import run_experiment
from analysis.core.trials import Experiment
from analysis.core.results import Record, provenance, save_record


def _record(name, size, cfg, fp):
    return Record(name, size, 0, dataclasses.asdict(cfg), run_experiment(name, EXPERIMENTS[name].CONFIGS["smoke"]),
                  provenance(1.0), fp)


def test_open_chapter_shows_live_then_records_and_marks_stale(tmp_path, capsys):
    module = EXPERIMENTS["ffn-basics"]
    cpu = config_for(module, "cpu")
    save_record(_record("ffn-basics", "cpu", cpu, fingerprint(module, cpu)), tmp_path)
    ch = open_chapter("demo", "Demo", "ffn-basics", directory=str(tmp_path))
    runs = ch.runs["ffn-basics"]
    assert [r.key for r in runs] == ["smoke", "recorded-cpu"] and runs[1].stale == ()
    assert ch.best("ffn-basics").key == "recorded-cpu" and ch.live("ffn-basics").key == "smoke"
    runs_of = {(c.id.experiment, c.id.run) for c in ch.claims.claims}
    assert runs_of == {("ffn-basics", "smoke"), ("ffn-basics", "recorded-cpu")}
    best = ch.claims_of("ffn-basics")
    assert best and all(c.id.recorded and c.id.scale == "cpu" for c in best)
    assert ch.claim("ffn-basics", best[0].key) is best[0]
    assert "ffn-basics: this build: smoke scale" in capsys.readouterr().out
    status = ch.gpu_status("ffn-basics").data
    assert "No GPU-scale run" in status and "H100" in status and "python -m analysis campaign --scale gpu --only ffn-basics" in status
    assert "partial" not in status

    gpu = config_for(module, "gpu")
    stale = _record("ffn-basics", "gpu", gpu, {**fingerprint(module, gpu), "code": "0" * 16})
    save_record(stale, tmp_path)
    runs = runs_for(Experiment(module), "smoke", {}, 0.0, str(tmp_path))
    assert runs[-1].key == "recorded-gpu" and runs[-1].label == "recorded, gpu scale (stale)"
    assert "STALE: the experiment's code has changed since" in runs[-1].note


def test_gpu_status_says_when_a_campaign_is_partial(tmp_path):
    from analysis.studies.chapter import Chapter, RenderedClaims
    from analysis.core.trials import Experiment, TrialFile, save_trial

    exp = Experiment(EXPERIMENTS["gau-length"])
    cfg = config_for(exp.module, "gpu")
    trials = exp.trials(cfg)
    t = trials[0]
    save_trial(TrialFile(exp.name, "gpu", t.key, exp.trial_id(cfg, t), t.seed, dict(t.params), {"x": 1},
                         provenance(1.0), {"config": "c", "code": exp.code, "data_version": 1}), tmp_path)
    ch = Chapter("d", "t", "smoke", RenderedClaims("d", "t"), runs={"gau-length": []}, directory=str(tmp_path))
    status = ch.gpu_status("gau-length").data
    assert f"partial: 1 of {len(trials)} trials stored, so no record is shown" in status


def test_a_partial_gpu_campaign_decides_the_claims_whose_trials_are_stored(tmp_path, monkeypatch):
    """gau-length's relu²/(ns) runs stored at 'gpu' scale (the smoke config standing in for the gpu one): its two
    relu² claims are decided as gpu records from 6 of 24 trials, said so in the chapter, and the log-scaled claims,
    whose trials are missing, are not."""
    import os

    from analysis.studies.chapter import Chapter, RenderedClaims, partial_claims
    from analysis.core.runner import TrialTask, _cached, run_in_process
    from analysis.core.trials import Experiment, claim_reads, save_trial

    exp = Experiment(EXPERIMENTS["gau-length"])
    smoke = config_for(exp.module, "smoke")
    monkeypatch.setitem(exp.module.CONFIGS, "gpu", smoke)
    cache = os.environ.get("ANALYSIS_LIVE_CACHE") or str(tmp_path / "cache")
    run_in_process(exp, "smoke", smoke, cache=cache)
    wanted = claim_reads(exp, smoke)["relu2-length-text"]
    for t in exp.trials(smoke):
        if t.key in wanted:
            tf = _cached(TrialTask(exp.name, "smoke", smoke, t, exp.trial_id(smoke, t), 1), exp.code, cache)
            save_trial(dataclasses.replace(tf, scale="gpu"), tmp_path)
    claims, note = partial_claims(exp, "gpu", str(tmp_path))
    total = len(exp.trials(smoke))
    assert {c.key for c in claims} <= {"relu2-length-recall", "relu2-length-text"} and claims
    assert all(c.id.scale == "gpu" and c.id.recorded and c.id.partial == f"{len(wanted)} of {total} trials"
               for c in claims)
    assert all(c.evidence == "gpu (recorded)" and c.evidence_words.endswith(f"{len(wanted)} of {total} trials")
               for c in claims)
    assert note.startswith(f"gpu campaign partial, {len(wanted)} of {total} trials") and "relu2-length-text" in note
    ch = Chapter("d", "t", "smoke", RenderedClaims("d", "t"), runs={"gau-length": []}, directory=str(tmp_path))
    for c in claims:
        ch.claims.record(c)
    status = ch.gpu_status("gau-length").data
    assert "decided from them at gpu scale (relu2-length-text: " in status
    assert partial_claims(exp, "cpu", str(tmp_path)) == ([], "")  # no cpu trials here


def test_verdict_lines_link_to_the_claims_stable_ledger_anchor():
    from analysis.studies.chapter import VerdictBox, verdict_line
    from analysis.core.verify import Claim

    c = Claim("k", "a claim", "src", 1.0, 1.0, 0.0, 0.1, "basis").identified("e", "cpu", recorded=True)
    assert verdict_line(c, "doc", 3).startswith('- <a href="ledger.html#doc-k" title="this claim in the ledger">doc.3</a>')
    assert 'href="ledger.html#doc-k-recorded-cpu"' in verdict_line(c, "doc", 3, strongest=False)
    assert verdict_line(c).startswith("- a claim: **holds**")
    box = VerdictBox((c,), "doc")
    assert repr(box) == "doc.1 holds (cpu (recorded), substantive): a claim"
    assert 'class="verdict-box"' in box._repr_html_()


def test_the_smoke_run_is_one_check_line():
    from analysis.studies.chapter import Provenance

    lines = ("e: this build: smoke scale on CPU, 1.4 s", "e: recorded: e at cpu scale", "f: recorded: f at cpu scale")
    p = Provenance(lines, "The code still runs: this build's smoke run took 1.4 s")
    assert p.summary() == ("The code still runs: this build's smoke run took 1.4 s. Provenance of the 2 recorded "
                           "runs shown here and of this build")
    assert Provenance(lines).summary() == "Provenance of the 3 runs shown here: this build and the recorded runs"
    assert '<details class="provenance"><summary>The code still runs' in p._repr_html_()


def test_duration_text_reads_as_prose_at_every_size():
    import math

    import pytest

    from analysis.studies.chapter import duration_text

    cases = {0.0: "under a second", 2.2e-4: "under a second", 1.0: "1 s", 24.4: "24 s", 59.4: "59 s",
             60.0: "1 minute", 153.6: "2.6 minutes", 596.0: "9.9 minutes", 597.0: "10 minutes",
             6150.0: "102 minutes", 74064.0: "1,234 minutes"}
    assert {s: duration_text(s) for s in cases} == cases
    for bad in (-1.0, math.nan, math.inf):
        with pytest.raises(ValueError, match="seconds must be finite"):
            duration_text(bad)


def test_seeds_words_state_what_a_planned_configs_seeds_resolve():
    import dataclasses

    import pytest

    from analysis.studies.chapter import seeds_words

    @dataclasses.dataclass
    class Cfg:
        seeds: object

    assert seeds_words(object()) == ""
    assert seeds_words(Cfg((0,))) == " It has one seed: nothing estimated over seeds has an error estimate at that scale."
    three = seeds_words(Cfg((0, 1, 2)))
    assert "It has 3 seeds: an estimate over them has 2 df" in three and "detects a mean of 2.3 standard" in three
    assert "It has 2 seeds" in seeds_words(Cfg(2)) and "5.8 standard deviations" in seeds_words(Cfg(2))
    with pytest.raises(ValueError, match="seeds must number at least 1"):
        seeds_words(Cfg(()))


def test_the_best_run_is_a_current_record_before_a_stale_one():
    from analysis.studies.chapter import Chapter, RenderedClaims, RunSet

    live = RunSet("this build", {}, "p", "smoke")
    cpu = RunSet("recorded, cpu scale", {}, "p", "cpu", recorded=True)
    gpu = RunSet("recorded, gpu scale", {}, "p", "gpu", recorded=True)
    stale_gpu = dataclasses.replace(gpu, stale=("the experiment's code has changed since",))
    ch = Chapter("doc", "t", "smoke", RenderedClaims("doc", "t"))
    ch.runs = {"x": [live, cpu, stale_gpu], "y": [live, cpu, gpu], "z": [live, stale_gpu]}
    assert ch.best("x") is cpu and ch.best("y") is gpu and ch.best("z") is stale_gpu
    assert stale_gpu.evidence == "gpu (recorded, stale)" and live.evidence == "smoke (live)"


def test_a_failing_verdict_line_says_on_which_side_it_fails():
    from analysis.studies.chapter import verdict_line
    from analysis.core.verify import Claim

    c = Claim("k", "FLASH matches FLASH-Quad", "src", 0.0, -0.129, 0.01, 0.05, "t", unit="nats/byte")
    assert c.verdict == "fails"
    assert verdict_line(c).endswith("**fails** (measured -0.129 nats/byte against = 0 nats/byte)")
    # a bound fails past the prediction plus its tolerance: the line names that limit, not the bare prediction
    bound = Claim("b", "error within its rounding bound", "src", 0.0, 0.0037, 0.0, 0.0035, "t", kind="upper_bound",
                  unit="relative")
    assert bound.verdict == "fails"
    assert verdict_line(bound).endswith("**fails** (measured 0.0037 relative against ≤ 0.0035 relative)")
    floor = Claim("f", "speed at least 0.9x", "src", 1.0, 0.53, 0.0, 0.1, "t", kind="lower_bound")
    assert floor.verdict == "fails" and verdict_line(floor).endswith("(measured 0.53 against ≥ 0.9)")


def test_a_runs_settings_are_its_records_own_config_else_todays():
    from analysis.studies.chapter import RunSet
    from analysis.core.registry import EXPERIMENTS, config_for

    live = RunSet("this build", {}, "p", "smoke")
    assert live.settings("gau-quality") == dataclasses.asdict(config_for(EXPERIMENTS["gau-quality"], "smoke"))
    old = RunSet("recorded", {}, "p", "cpu", recorded=True, config={"ctx": 64, "chunk": 16})
    assert old.settings("gau-quality") == {"ctx": 64, "chunk": 16}


def test_gpu_status_says_when_the_only_gpu_record_is_stale():
    from analysis.studies.chapter import Chapter, RenderedClaims, RunSet

    live = RunSet("this build", {}, "p", "smoke")
    gpu = RunSet("recorded, gpu scale", {}, "p", "gpu", recorded=True)
    stale = dataclasses.replace(gpu, stale=("config differs (ctx: 128 -> 512)",))
    ch = Chapter("doc", "t", "smoke", RenderedClaims("doc", "t"))
    cpu = RunSet("recorded, cpu scale", {}, "p", "cpu", recorded=True)
    ch.runs = {"gau-length": [live, gpu], "flash-counts": [live, stale], "gau-init": [live, cpu, stale]}
    assert ch.gpu_status("gau-length").data == "The GPU-scale run of `gau-length` is included."
    text = ch.gpu_status("flash-counts").data  # the stale gpu record is the strongest run: its verdicts count
    assert text.startswith("**No current GPU-scale run of `flash-counts`:** its gpu record is stale: it was made "
                           "with another config. It is shown and, since no current run measured its claims, its "
                           "verdicts are this chapter's for now, marked stale.")
    assert "On one H100 its 1 trial would take under a second by estimate (" in text
    assert "That time is an estimate" in text
    beside = ch.gpu_status("gau-init").data  # a current cpu record outranks it; no claim of either is in the chapter
    assert "It is shown, marked stale, and the current cpu-scale verdicts count." in beside and "|" not in beside


def test_stale_words_say_each_reason_in_prose_and_refuse_unknown_ones():
    from analysis.studies.chapter import stale_words

    assert stale_words(["config differs (ctx: 128 -> 512; seeds: (0, 1) -> (0, 1, 2))",
                        "the experiment's code has changed since"]) == "with another config and by older code"
    assert stale_words(["data version 1, today 2"]) == "in an older data layout"
    with pytest.raises(ValueError, match="reasons must start with one of"):
        stale_words(["moon phase"])
    with pytest.raises(ValueError, match="at least one"):
        stale_words([])


def test_the_stale_gpu_verdicts_are_listed_beside_the_current_ones_and_their_disagreements_named():
    """gau_trained once said the stale gpu verdicts were 'listed beside' the cpu ones while the chapter showed none:
    the status now carries the table it speaks of, and names where the two disagree."""
    from analysis.studies.chapter import Chapter, RenderedClaims, RunSet
    from analysis.core.verify import Claim

    live = RunSet("this build", {}, "p", "smoke")
    cpu = RunSet("recorded, cpu scale", {}, "p", "cpu", recorded=True)
    stale = RunSet("recorded, gpu scale", {}, "p", "gpu", recorded=True, stale=("the experiment's code has changed since",))
    ch = Chapter("doc", "t", "smoke", RenderedClaims("doc", "t"))
    ch.runs = {"gau-length": [live, cpu, stale]}

    def cost(measured, size, is_stale=False, key="text-cost"):
        claim = Claim(key, f"{key} is above 0", "src", 0.0, measured, 0.01, 0.05, "t SE", kind="above",
                      unit="nats/byte")
        return claim.identified("gau-length", size, recorded=True, stale=is_stale)

    for c in (cost(0.334, "cpu"), cost(-0.035, "gpu", True), cost(0.5, "cpu", key="agree"),
              cost(0.6, "gpu", True, key="agree"), cost(0.2, "gpu", True, key="gpu-only")):
        ch.claims.record(c)
    text = ch.gpu_status("gau-length").data
    assert "its verdicts are listed below beside the current cpu-scale ones, which count." in text
    table = [line for line in text.splitlines() if line.startswith("| ")]
    assert table[0] == "| # | claim | cpu record (counts) | gpu record (stale) |" and len(table) == 4
    assert table[1].endswith("| text-cost is above 0 | 0.334 nats/byte: holds | -0.035 nats/byte: inconclusive |")
    assert table[3].endswith("| gpu-only is above 0 | not measured | 0.2 nats/byte: holds |")
    assert ("They disagree on 1 claim: " in text and ">doc.1</a> holds on the cpu record (0.334) and is "
            "inconclusive on the stale gpu record (-0.035)." in text)


def test_gpu_status_of_a_campaign_stored_whole_by_older_code(tmp_path):
    """Every trial stored, one by other code: not 'partial' (the stale record is assembled from them), and the
    command that runs the stale ones again."""
    from analysis.studies.chapter import Chapter, RenderedClaims
    from analysis.core.trials import Experiment, TrialFile, save_trial

    exp = Experiment(EXPERIMENTS["gau-kernel"])
    cfg = config_for(exp.module, "gpu")
    trials = exp.trials(cfg)
    for i, t in enumerate(trials):
        code = "older" if i == 0 else exp.code
        save_trial(TrialFile(exp.name, "gpu", t.key, exp.trial_id(cfg, t), t.seed, dict(t.params), {"x": 1},
                             provenance(1.0), {"config": "c", "code": code, "data_version": 1}), tmp_path)
    ch = Chapter("d", "t", "smoke", RenderedClaims("d", "t"), runs={"gau-kernel": []}, directory=str(tmp_path))
    status = ch.gpu_status("gau-kernel").data
    assert "partial" not in status
    assert f"All {len(trials)} of its gpu trials are stored; 1 of them was made by code that has changed" in status
    assert "`python -m analysis campaign --scale gpu --only gau-kernel --refresh-stale` runs that one again" in status


def test_a_reader_runs_a_chapters_experiment_with_a_setting_changed(tmp_path):
    """Try it: the chapter's experiment at smoke scale with one setting changed, its claims beside the chapter's;
    a setting the experiment does not have, or an experiment not in the chapter, is refused by name."""
    import pytest

    ch = open_chapter("demo", "Demo", "entropy-bound", directory=str(tmp_path))
    mine = {c.key for c in ch.claims_of("entropy-bound", computed=False)}
    got = ch.try_it("entropy-bound", seed=3)
    assert got.settings == {"seed": 3} and got.seconds >= 0 and {k for k, _, _ in got.rows} >= mine
    assert all(yours is not None for _, _, yours in got.rows) and "| claim | the chapter's run | your run |" in \
        got._repr_markdown_() and "`seed = 3`" in got._repr_markdown_()
    page = got._repr_html_()  # what the book renders: a table, one row per claim, and the setting changed
    assert "<code>seed = 3</code>" in page and page.count("<tr>") == len(got.rows) + 1
    assert "$H - H(1/K)$" not in page and r"\(H - H(1/K)\)" in page  # a unit's maths is typeset, as in the box
    with pytest.raises(ValueError, match="does not apply to experiment"):
        ch.try_it("entropy-bound", no_such_setting=1)
    with pytest.raises(ValueError, match="name must be an experiment of chapter 'demo'"):
        ch.try_it("gau-length")
