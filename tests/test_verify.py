import json
import math

import pytest

from analysis.core.verify import ChapterClaims, Claim, claims_html, judge, load_chapter_claims
from analysis.studies.notes import severity


def make(**kw):
    base = dict(key="k", statement="s", source="src", predicted=1.0, measured=1.0, uncertainty=0.01,
                tolerance=0.03, tolerance_basis="3 sigma")
    base.update(kw)
    return Claim(**base)


@pytest.mark.parametrize(
    "kind, predicted, measured, tol, expected",
    [
        ("equal", 1.0, 1.02, 0.03, "holds"),
        ("equal", 1.0, 1.08, 0.03, "holds approximately"),
        ("equal", 1.0, 0.80, 0.03, "fails"),
        ("upper_bound", 0.0, -5.0, 0.0, "holds"),
        ("upper_bound", 0.0, 1e-3, 0.0, "fails"),
        ("upper_bound", 1.0, 1.05, 0.0, "holds approximately"),
        ("lower_bound", 2.0, 2.5, 0.01, "holds"),
        ("lower_bound", 2.0, 1.9, 0.01, "holds approximately"),
        ("lower_bound", 2.0, 1.0, 0.01, "fails"),
    ],
)
def test_judge(kind, predicted, measured, tol, expected):
    assert judge(kind, predicted, measured, tol, 0.10) == expected


@pytest.mark.parametrize(
    "predicted, measured, alternative, expected",
    [
        (2.0, 2.0, 1.0, "inconclusive"),  # tolerance 1.5 covers both the prediction and the alternative
        (2.0, 2.0, 8.0, "holds"),  # the alternative is ruled out
        (2.0, 8.0, 8.0, "fails"),  # a failed prediction stays failed, whatever the alternative
        (2.0, 3.6, 3.0, "inconclusive"),  # holding approximately, with an alternative that holds outright
        (2.0, 3.6, 0.0, "holds approximately"),  # the alternative is further off than the band
        # the alternative fails, but lies within the tolerance of the prediction: the comparison cannot tell them apart
        (2.0, 3.6, 1.0, "inconclusive"),
    ],
)
def test_inconclusive_when_the_alternative_passes_too(predicted, measured, alternative, expected):
    if abs(alternative - predicted) > 1.5:  # judge() alone knows nothing of the gap a claim's run must detect
        assert judge("equal", predicted, measured, 1.5, 0.1, alternative) == expected
    claim = make(predicted=predicted, measured=measured, tolerance=1.5, alternative=alternative,
                 alternative_note="the default", approx_rel=0.1, approx_words="roughly")
    assert claim.verdict == expected


def test_alternative_needs_a_note_and_shows_in_the_table():
    with pytest.raises(ValueError, match="alternative_note"):
        make(alternative=1.0)
    with pytest.raises(ValueError, match="alternative must be finite"):
        make(alternative=float("nan"), alternative_note="x")
    c = make(alternative=1.01, alternative_note="the default scale")
    assert c.verdict == "inconclusive"
    assert "alternative 1.01: the default scale" in claims_html([c])
    assert Claim.from_dict(json.loads(json.dumps(c.to_dict()))).verdict == "inconclusive"


def test_exact_claims_with_no_approximate_band_hold_or_fail():
    assert make(predicted=2_097_152, measured=2_099_712, tolerance=0.0).verdict == "fails"
    assert make(predicted=2_097_152, measured=2_099_712, tolerance=0.0, approx_rel=0.1,
                approx_words="about").verdict == "holds approximately"


def test_verdict_text_reports_percent_and_corrected_prediction_is_judged():
    c = make(predicted=0.01, measured=0.0105, tolerance=0.0001, corrected=0.01045, approx_rel=0.1,
             approx_words="about")
    assert c.verdict == "holds approximately"
    assert c.verdict_text() == "holds within 5%"
    assert c.corrected_verdict == "holds"
    failing = make(predicted=0.01, measured=0.05, tolerance=0.001, corrected=0.0495)
    assert failing.verdict == "fails" and failing.corrected_verdict == "holds"
    assert make().corrected_verdict is None
    assert make(predicted=0.0, measured=0.0).deviation_pct == 0.0
    assert math.isinf(make(predicted=0.0, measured=1.0).deviation_pct)


@pytest.mark.parametrize(
    "kw, message",
    [
        ({"key": ""}, "key must be"),
        ({"kind": "roughly"}, "kind must be one of"),
        ({"measured": float("nan")}, "measured must be finite"),
        ({"tolerance": -1.0}, "tolerance must be >= 0"),
        ({"uncertainty": float("inf")}, "uncertainty must be finite"),
        ({"tolerance_basis": "  "}, "tolerance_basis must say"),
    ],
)
def test_invalid_claims_are_rejected(kw, message):
    with pytest.raises(ValueError, match=message):
        make(**kw)


def test_round_trip_recomputes_verdicts(tmp_path):
    ch = ChapterClaims("chapter", "A chapter")
    ch.record(make(key="a"))
    ch.record(make(key="b", measured=2.0))
    ch.record(make(key="a", measured=1.5))  # replaces by key
    assert [c.key for c in ch.claims] == ["b", "a"]
    path = ch.save(tmp_path)
    doc = json.loads(path.read_text())
    doc["claims"][0]["verdict"] = "holds"  # a stored verdict is not trusted
    path.write_text(json.dumps(doc))
    back = load_chapter_claims(path)
    assert [c.verdict for c in back.claims] == ["fails", "fails"]


def test_save_only_when_claims_dir_is_set(tmp_path, monkeypatch):
    ch = ChapterClaims("chapter", "A chapter")
    assert ch.save() is None
    monkeypatch.setenv("ANALYSIS_CLAIMS_DIR", str(tmp_path / "claims"))
    ch.record(make())
    assert (tmp_path / "claims" / "chapter.json").exists()


def test_malformed_claims_file_names_the_file(tmp_path):
    bad = tmp_path / "x.json"
    bad.write_text("{not json")
    with pytest.raises(ValueError, match="x.json: not a valid claims file"):
        load_chapter_claims(bad)
    with pytest.raises(ValueError, match="chapter must be a plain document name"):
        ChapterClaims("../up", "t")


def test_html_table_shows_numbers_and_verdicts():
    html = claims_html([make(statement="a <b>", measured=1.5, corrected=1.49)])
    assert "a &lt;b&gt;" in html and "fails" in html and "1.49" in html and "<table" in html


def test_no_approximation_band_unless_the_source_states_one():
    assert make(measured=1.08).verdict == "fails"  # no flat band by default
    with pytest.raises(ValueError, match="approx_words must quote"):
        make(approx_rel=0.1)
    c = make(measured=1.08, approx_rel=0.1, approx_words="about 1")
    assert c.verdict_text() == "holds within 8%"
    with pytest.raises(ValueError, match="approx_rel must be 0 for a directional claim"):
        make(kind="below", approx_rel=0.1, approx_words="about")


@pytest.mark.parametrize(
    "kind, measured, tol, expected",
    [
        ("below", -1.0, 0.5, "holds"),  # the whole interval below 0: shown
        ("below", -0.4, 0.5, "inconclusive"),  # the interval straddles 0: not shown, not refuted
        ("below", 0.6, 0.5, "fails"),  # wholly above
        ("below", 0.0, 0.0, "fails"),  # exactly on it: not below
        ("above", 1.0, 0.5, "holds"),
        ("above", 0.4, 0.5, "inconclusive"),
        ("above", -0.6, 0.5, "fails"),
    ],
)
def test_directional_claims_must_be_shown(kind, measured, tol, expected):
    assert judge(kind, 0.0, measured, tol, 0.0) == expected
    assert make(kind=kind, predicted=0.0, measured=measured, tolerance=tol).verdict == expected


def test_underpowered_passes_are_inconclusive():
    # passes, but the run could not have found a deviation of the size the claim is about
    assert make(measured=1.01, detectable=0.5, effect=0.2).verdict == "inconclusive"
    assert make(measured=1.01, detectable=0.1, effect=0.2).verdict == "holds"
    assert make(measured=1.01, detectable=0.5).verdict == "holds"  # no effect named: resolved to its tolerance
    assert make(measured=2.0, detectable=0.5, effect=0.2).verdict == "fails"  # a significant miss stays a miss
    # a directional claim that is shown was detected, whatever the power
    assert make(kind="below", predicted=0.0, measured=-1.0, tolerance=0.1, detectable=5.0, effect=0.2).verdict == "holds"
    # one seed: no error estimate, nothing decided either way
    assert make(measured=9.0, tolerance=0.0, detectable=math.inf).verdict == "inconclusive"
    assert make(measured=1.0, corrected=9.0, tolerance=0.0, detectable=math.inf).corrected_verdict == "inconclusive"
    with pytest.raises(ValueError, match="detectable must be >= 0"):
        make(detectable=-1.0)
    with pytest.raises(ValueError, match="effect must be finite"):
        make(effect=math.inf)


def test_estimate_fields_and_the_table_say_what_is_detectable():
    from analysis.core.stats import mean_estimate
    from analysis.core.verify import detects_text, estimate_fields

    est = mean_estimate([0.1, 0.3, 0.2], "paired seeds")
    f = estimate_fields(est, "the loss difference")
    assert f["tolerance"] == pytest.approx(4.3027 * est.se, rel=1e-4)
    assert f["detectable"] == pytest.approx(5.6535 * est.se, rel=1e-4)
    assert "3 paired seeds (2 df)" in f["tolerance_basis"]
    c = make(**{**f, "predicted": 0.0}, effect=0.05)
    assert c.verdict == "inconclusive" and "detects ≥" in claims_html([c])
    assert detects_text(c).endswith("the claim is about 0.05")
    one = estimate_fields(mean_estimate([0.2], "seeds"), "x", sided="one")
    assert one["tolerance"] == 0.0 and math.isinf(one["detectable"])
    assert detects_text(make(**{**one, "predicted": 0.0})) == "no error estimate"
    back = Claim.from_dict(json.loads(json.dumps(c.to_dict())))
    assert back.detectable == c.detectable and back.verdict == "inconclusive"


def test_a_named_reason_leaves_the_claim_undecided():
    from analysis.core.verify import detects_text

    moving = make(measured=5.0, detectable=0.1, undecided="the optimum still moves with the budget")
    assert moving.verdict == "inconclusive" and moving.corrected_verdict is None
    assert detects_text(moving) == "undecided: the optimum still moves with the budget"
    assert make(measured=5.0, corrected=5.0, undecided="x").corrected_verdict == "inconclusive"
    assert make(measured=5.0, undecided=" ").verdict == "fails"  # blank is no reason


def _runs(key, statement="s", **kw):
    c = make(key=key, statement=statement, **kw)
    return (c.identified("e", "smoke", recorded=False), c.identified("e", "cpu", recorded=True),
            c.identified("e", "gpu", recorded=True))


def test_strongest_evidence_is_one_definition_and_smoke_is_never_a_measurement():
    from analysis.core.verify import claim_numbers, measurements, strongest_claims, unmeasured

    a_smoke, a_cpu, a_gpu = _runs("a")
    b_smoke, b_cpu, _ = _runs("b")
    only_smoke = make(key="c").identified("e", "smoke", recorded=False)
    claims = [a_smoke, b_smoke, only_smoke, a_cpu, b_cpu, a_gpu]
    assert measurements(claims) == [a_cpu, b_cpu, a_gpu]
    assert strongest_claims(claims) == [a_gpu, b_cpu]  # first-appearance order, the strongest run of each
    assert claim_numbers(claims) == {("e", "a"): 1, ("e", "b"): 2}
    assert claim_numbers([a_smoke, a_cpu, b_cpu]) == claim_numbers(claims)  # a gpu record renumbers nothing
    assert unmeasured(claims) == [only_smoke]
    html = claims_html(claims, "chap")
    assert html.count("<tr>") == 3 and "smoke, this build" not in html and "gpu record" in html
    assert 'href="ledger.html#chap-a"' in html and ">chap.2</a>" in html
    assert "1 claim made only by this build" in html


def test_a_stale_record_ranks_below_every_current_measurement():
    """A gpu record made by other code or another config measured another setup: a current cpu record (or a live cpu
    run) is the stronger evidence, and the table says the record is stale."""
    from analysis.core.verify import evidence_words, strongest_claims

    _, a_cpu, _ = _runs("a")
    a_stale = make(key="a").identified("e", "gpu", recorded=True, stale=True)
    a_live_cpu = make(key="a").identified("e", "cpu", recorded=False)
    assert a_stale.evidence == "gpu (recorded, stale)" and evidence_words(a_stale.evidence) == "gpu record (stale)"
    assert strongest_claims([a_cpu, a_stale]) == [a_cpu] and strongest_claims([a_live_cpu, a_stale]) == [a_live_cpu]
    assert strongest_claims([make(key="a").identified("e", "smoke", recorded=False), a_stale]) == [a_stale]
    assert "gpu record (stale)" in claims_html([a_stale], "chap")
    with pytest.raises(ValueError, match="only a record can be stale"):
        from analysis.core.verify import ClaimId

        ClaimId("e", "a", "cpu", recorded=False, stale=True)


def test_short_statement_drops_the_details_and_never_cuts_maths():
    from analysis.core.verify import short_statement

    assert short_statement("$q \\cdot k$ is normal, $N(0, d)$ (excess kurtosis 0; at $d = 1$)") == \
        "$q \\cdot k$ is normal, $N(0, d)$"
    assert short_statement("(only details)") == "(only details)"
    assert short_statement("x (a (nested) one)", details=True) == "x (a (nested) one)"
    long = "word " * 10 + "$a + b + c + d + e + f + g + h + i + j + k + l + m + n$ tail"
    cut = short_statement(long, limit=60)
    assert cut.endswith(" …") and cut.count("$") % 2 == 0 and len(cut) <= 62
    with pytest.raises(ValueError, match="limit must be >= 20"):
        short_statement("x", limit=5)


def test_the_verdict_box_lists_each_claim_once_with_severity_and_anchors():
    from analysis.core.verify import verdict_box_html

    a = _runs("a", "claim A (details 1)", measured=1.5)
    eps = _runs("ln-scale", "LayerNorm (eps details)", measured=1.5)
    c64, c128 = (make(key=f"c{c}", statement=f"same words (c = {c})").identified("e", "cpu", True) for c in (64, 128))
    html = verdict_box_html([*a, *eps, c64, c128], "chap", severity)
    assert html.count('<tr id="claim-') == 4 and 'id="claim-a"' in html and 'href="ledger.html#chap-a"' in html
    assert "claim A<" in html and "details 1" not in html  # short form
    assert "same words (c = 64)" in html and "same words (c = 128)" in html  # told apart by their details
    assert "<br>formal</small>" in html and "<br>substantive</small>" in html
    assert "4 claims, each at its strongest evidence" in html and "2 fail<" in html and "2 hold<" in html
    assert "gpu record<br>" in html and "smoke" not in html and '<details class="verdict-box" open>' in html
    many = [make(key=f"k{i}").identified("e", "cpu", True) for i in range(16)]
    assert '<details class="verdict-box" open>' in verdict_box_html(many, "chap", severity)  # the verdicts stay on the first screen


def test_verdict_counts_read_as_verbs():
    from analysis.core.verify import verdict_count

    assert [verdict_count(v, n) for v, n in (("holds", 1), ("holds", 29), ("fails", 11), ("inconclusive", 1),
                                             ("inconclusive", 3), ("holds approximately", 2))] == [
        "1 holds", "29 hold", "11 fail", "1 is inconclusive", "3 are inconclusive", "2 hold approximately"]


def test_addresses_break_at_slashes_dots_and_underscores_but_maths_numbers_and_tags_do_not():
    from analysis.core.verify import address_breaks

    assert address_breaks("kexue.fm/archives/8934 (a / b)") == "kexue.<wbr>fm/<wbr>archives/<wbr>8934 (a / b)"
    assert address_breaks("(analysis.theory.flash_counts)") == \
        "(analysis.<wbr>theory.<wbr>flash_<wbr>counts)"
    assert address_breaks("FLOPs/token") == "FLOPs/<wbr>token"
    assert address_breaks("1.507e+06 ± 0.02") == "1.507e+06 ± 0.02"  # numbers keep their digits together
    kept = '<span class="math">\\(1/(ns)\\)</span>, $1/n$, </small>'
    assert address_breaks(kept) == kept


def test_a_measurement_that_only_bounds_the_quantity_is_written_as_a_bound():
    """No crossover up to the longest length measured: the value is a lower bound, and every table says so."""
    from analysis.site.sphinx_ledger import miss_words
    from analysis.core.verify import bounded

    c = make(key="cross", predicted=256.0, measured=8192.0, tolerance=106.0, measured_bound="≥")
    assert c.verdict == "fails" and bounded(c, "8192") == "≥ 8192" and bounded(make(), "1") == "1"
    assert "<td>≥ 8192 ±" in claims_html([c.identified("e", "cpu", True)], "chap")
    assert miss_words(c) == "off by at least a factor 32"
    assert miss_words(make(predicted=256.0, measured=8192.0, measured_bound="≤")) == "off by a factor 32"
    with pytest.raises(ValueError, match="measured_bound must be"):
        make(measured_bound=">=")


def test_an_inconclusive_verdict_names_the_rule_that_made_it():
    """The verdict line gives the real reason: not 'the alternative fits as well' when the alternative fails."""
    from analysis.studies.chapter import verdict_line

    assert make().inconclusive_reason == ""
    assert make(undecided="the optimum still moves").inconclusive_reason == "the optimum still moves"
    assert make(detectable=math.inf).inconclusive_reason == "one run: no error estimate"
    assert make(kind="below", predicted=0.0, measured=-0.01, tolerance=0.02).inconclusive_reason == \
        "the interval reaches both sides of the prediction"
    alt = make(alternative=1.01, alternative_note="the rival rule")
    assert alt.inconclusive_reason == "the alternative, the rival rule, fits as well"
    far = make(alternative=30.0, alternative_note="the rival rule", detectable=0.5, effect=0.1)
    assert far.verdict == "inconclusive"
    assert far.inconclusive_reason == "the run detects only differences of 0.5 or more, larger than the 0.1 the claim " \
        "is about"
    assert "fits as well" not in verdict_line(far) and "(the run detects only" in verdict_line(far)


@pytest.mark.parametrize("source, expected", [
    ("Su 2022, kexue.fm/archives/8934", "source"),
    ("DL——Transformer study notes; Vaswani et al. 2017", "source"),
    ("the notes' reason for LayerNorm in decoders", "source"),
    ("Vaswani et al. 2017, sec. 3.4 (quoted by the notes)", "source"),
    ("this book's target for its kernel", "book"),
    ("this book (Su 2021's method, extended)", "book"),  # the book's extension of a source's method is its own
    ("bound derived in this chapter from the notes' curve", "book"),
    ("derived", "book"),
    ("PyTorch's torch.nn.Transformer against Vaswani et al. 2017, sec. 5.4 (the placement the notes restate)",
     "software"),
    ("torch.nn.TransformerDecoderLayer, after Vaswani et al. 2017", "software"),
    ("Hugging Face transformers; PyTorch 2.4 or later", "software"),
    ("Su 2022, kexue.fm/archives/9019 (softmax suits attention better)", "paper"),  # not one of the five
    ("Wang et al. 2022 (DeepNet), sec. 4", "paper"),
])
def test_provenance_is_read_from_the_source(source, expected):
    from analysis.core.verify import provenance_of

    assert provenance_of(source) == expected
    assert make(source=source).origin == expected


def test_a_named_provenance_overrides_the_source_and_a_wrong_one_is_refused():
    from analysis.core.verify import provenance_of

    assert make(source="Gibbs' inequality", provenance="book").origin == "book"
    assert make(source="Gibbs' inequality").origin == "paper"
    with pytest.raises(ValueError, match="provenance must be"):
        make(provenance="mine")
    with pytest.raises(ValueError, match="source must name"):
        provenance_of("  ")
    assert Claim.from_dict(json.loads(json.dumps(make(provenance="software").to_dict()))).origin == "software"


def test_two_tallies_keep_the_sources_apart_from_every_other_claim():
    """A failure of PyTorch's module, or of the book's own target, is not a failure of the five sources."""
    from analysis.core.verify import tallies, tallies_html, verdict_box_html

    src = "Su 2022, kexue.fm/archives/8990"
    claims = [make(key="a", source=src), make(key="b", source=src, measured=5.0),
              make(key="c", source="PyTorch documentation", measured=5.0),
              make(key="d", source="this book's target"), make(key="e", source="this book", measured=5.0)]
    assert tallies(claims) == ({"holds": 1, "fails": 1}, {"holds": 1, "fails": 2}, {"book": 2, "software": 1})
    text = tallies_html(claims)
    assert text.startswith("2 claims from the five sources: ") and ">1 holds<" in text.split("; 3 other")[0]
    assert "; 3 other claims (the book's own: 2, checks of other software: 1): " in text and ">2 fail<" in text
    assert tallies_html(claims[:2]).startswith("2 claims from the five sources") and "other" not in tallies_html(
        claims[:2])
    assert tallies_html(claims[2:3]).startswith("no claim from the five sources; 1 other claim")
    box = verdict_box_html([c.identified("e", "cpu", True) for c in claims], "chap", severity)
    assert "5 claims, each at its strongest evidence. 2 claims from the five sources" in box
    assert "(checks of other software)</small>" in box and box.count("(the book&#x27;s own)</small>") == 2


def test_a_claim_about_gpu_arithmetic_is_decided_only_by_a_current_gpu_run():
    """The fused kernel's float16 error held on Triton's interpreter (2.1e-3 within 3.5e-3) and failed on the H100
    (3.7e-3): the emulation is a check beside the claim, never its evidence, and a stale gpu record keeps the claim
    inconclusive with both numbers shown."""
    from analysis.core.verify import beside_text, strongest_claims, verdict_box_html

    def kernel(measured):
        return make(key="exact", predicted=0.0, measured=measured, tolerance=3.5e-3, kind="upper_bound",
                    gpu_only="the kernel is GPU code")

    cpu = kernel(2.1e-3).identified("e", "cpu", recorded=True)
    gpu = kernel(3.7e-3).identified("e", "gpu", recorded=True)
    stale = kernel(3.7e-3).identified("e", "gpu", recorded=True, stale=True)
    assert kernel(2.1e-3).verdict == "holds"  # a claim whose run is not known is the comparison alone
    assert cpu.verdict == "inconclusive" and cpu.check_verdict == "holds"
    assert cpu.inconclusive_reason == ("only a gpu run decides it (the kernel is GPU code); this cpu record is a "
                                       "check, by which it holds")
    assert gpu.verdict == "fails" and gpu.inconclusive_reason == ""
    assert stale.verdict == "inconclusive" and stale.check_verdict == "fails"
    assert stale.inconclusive_reason == ("only a current gpu record decides it, and this one is stale: it measured "
                                         "0.0037, by which it fails")
    assert strongest_claims([cpu, stale]) == [stale] and strongest_claims([stale, gpu]) == [gpu]
    assert strongest_claims([cpu, gpu]) == [gpu]
    assert beside_text(stale, [cpu, stale]) == "cpu record: 0.0021, holds as a check"
    assert beside_text(cpu, [cpu, stale]) == "gpu record (stale): 0.0037, fails"
    box = verdict_box_html([cpu, stale], "chap", severity)
    assert "gpu record (stale)<br>" in box and "beside it: cpu record: 0.0021, holds as a check" in box
    assert "<small>gpu record (stale): 0.0037, fails</small>" in box  # both numbers, each with its comparison
    assert "1 is inconclusive" in box and "holds<" not in box
    # any other claim is ranked as before: a current cpu record over a stale gpu one
    plain_cpu, plain_stale = (make(key="p").identified("e", s, True, stale=s == "gpu") for s in ("cpu", "gpu"))
    assert strongest_claims([plain_cpu, plain_stale]) == [plain_cpu] and beside_text(plain_cpu, [plain_stale]) == ""


def test_a_named_rival_sets_the_gap_the_run_must_detect():
    """deep_gau's lambda^7 held at p = 7.28 ± 1.72 while its run detected only 2.25, less finely than the 2.24 that
    separates the source's 7 from the 9.24 gau-init measures: a pass that cannot tell the two apart is no verdict."""
    rival = dict(predicted=-7.0, measured=-7.279, tolerance=1.716, alternative=-9.243,
                 alternative_note="the exponent gau-init measures, 9.24")
    weak = make(**rival, detectable=2.255)
    assert weak.rival_gap == pytest.approx(2.243) and weak.verdict == "inconclusive"
    assert weak.inconclusive_reason == ("the run detects only differences of 2.25 or more, larger than the 2.24 that "
                                        "separates the prediction from the alternative, the exponent gau-init "
                                        "measures, 9.24")
    assert make(**rival, detectable=2.0).verdict == "holds"  # fine enough: the rival is told apart
    assert make(**{**rival, "measured": -8.5}, detectable=2.255).verdict == "inconclusive"  # the rival fits as well
    assert make(**rival, detectable=2.255, effect=3.0).verdict == "holds"  # a stated effect is the gap
    from analysis.core.verify import detects_text

    assert detects_text(weak) == "detects ≥ 2.25; the rival lies 2.24 away"


def test_a_comparison_without_noise_detects_what_exceeds_its_tolerance():
    """Every claim has a detectable difference: the run's, or for an exact comparison its tolerance."""
    assert make(tolerance=0.03).detects == 0.03 and make(detectable=0.2).detects == 0.2
    assert make(alternative=1.02, alternative_note="a rival").has_rival and make(effect=0.1).has_rival
    assert make(kind="below", predicted=0.0, measured=-1.0).has_rival and not make().has_rival
    # an exact check whose tolerance exceeds the gap to its rival cannot tell them apart
    assert make(measured=1.0, tolerance=0.03, alternative=1.04, alternative_note="a rival").verdict == "holds"
    within = make(measured=0.96, tolerance=0.05, alternative=1.04, alternative_note="a rival")
    assert judge("equal", 1.0, 0.96, 0.05, 0.0, 1.04) == "holds"  # the rival itself fails the comparison
    assert within.verdict == "inconclusive" and "larger than the 0.04 that separates" in within.inconclusive_reason


def test_a_bounds_rival_is_a_value_it_must_be_told_from():
    """'At least 1.5x' against 'no speed-up': the rival fits only when the measurement lies near 1, not whenever it
    exceeds 1."""
    rival = dict(kind="lower_bound", predicted=1.5, alternative=1.0, alternative_note="no speed-up")
    assert make(**rival, measured=1.98, tolerance=0.13).verdict == "holds"
    assert make(**rival, measured=1.2, tolerance=0.13).verdict == "fails"
    assert make(**rival, measured=1.3, tolerance=0.35).verdict == "inconclusive"  # 1.0 lies within the tolerance


def test_the_box_opens_with_the_evidence_and_the_largest_miss_with_its_side():
    """A failing claim says on which side and by how much; the largest miss of the sources' claims (in units of what
    its run resolves) heads the box with what holds instead, and a miss within rounding of its tolerance is none."""
    from analysis.core.verify import Claim, box_summary_html, largest_miss, miss_size, miss_words, verdict_box_html

    src = "Su 2022, kexue.fm/archives/8934"
    far = Claim("far", "FLASH-Quad fits about 2x the batch", src, 2.0, 0.35, 0.0, 0.5, "one significant figure",
                unit="x", corrected=0.35, corrected_note="0.35x against a fused attention").identified("e", "cpu", True)
    near = Claim("near", "a ratio of 1", src, 1.0, 1.505, 0.0, 0.5, "one significant figure",
                 unit="x").identified("e", "cpu", True)
    ok = Claim("ok", "a ratio of 3", src, 3.0, 3.1, 0.0, 0.5, "one significant figure").identified("e", "cpu", True)
    assert far.verdict == near.verdict == "fails" and ok.verdict == "holds"
    assert miss_words(far) == "0.35 x against = 2 x: below by 1.65 x" and miss_words(ok) == ""
    assert miss_size(near) == 0.0 < miss_size(far) == 1.65 / 0.5  # 0.005 past a tolerance of 0.5: rounding
    assert largest_miss([near, far, ok]) is far and largest_miss([near, ok]) is None
    summary = box_summary_html([far, near, ok], "demo", {("e", "far"): 1, ("e", "near"): 2, ("e", "ok"): 3})
    assert "Evidence</strong>, claim by claim: cpu record: 3." in summary
    assert 'href="#claim-far">demo.1</a>' in summary and "below by 1.65 x" in summary
    assert "what holds instead: 0.35x against a fused attention" in summary
    box = verdict_box_html([far, near, ok], "demo", severity)
    assert '<details class="verdict-box" open>' in box and "below by 1.65 x" in box
