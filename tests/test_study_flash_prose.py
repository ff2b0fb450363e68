"""The FLASH chapter's sentences built from recorded verdicts: which claims hold and which fail, exactly as glued."""

from types import SimpleNamespace

from analysis.studies.flash import counts_sentence, identities_sentence, parameters_sentence
from analysis.studies.flash.checks import LEAK_NAMES, leak_sentence, verdict_sentence
from analysis.studies.flash.memory import batch_sentence, batch_verdicts, lean_batch_sentence, sizes_sentence


def claim(verdict: str, measured: float = 0.0) -> SimpleNamespace:
    """A stand-in for a recorded claim with this verdict."""
    return SimpleNamespace(verdict=verdict, verdict_text=lambda: verdict, measured=measured)


def test_verdict_sentence_one_sentence_per_verdict():
    assert verdict_sentence("x", [("A", "holds"), ("B", "holds")]) == "The claim that x holds for A and B."
    assert (verdict_sentence("x", [("A", "fails"), ("B", "holds"), ("C", "is inconclusive")], scope="against")
            == "The claim that x fails against A. It holds against B. It is inconclusive against C.")
    assert verdict_sentence("x", [("", "fails")]) == "The claim that x fails."
    assert verdict_sentence("x", []) == ""


def test_leak_sentence_as_recorded_and_with_a_verdict_changed():
    recorded = {f"leak-{v}": claim("holds" if v in ("gau-ours", "flash-ours", "peer-flash") else "fails")
                for v in LEAK_NAMES}
    assert leak_sentence(recorded) == (
        "The claim that appending tokens leaves a prefix's outputs unchanged fails for the printed $1/(ns)$, the printed "
        "FLASH divisor $(g-1)n/c$, the appendix's $\\mathrm{relu}^2(qk/n)$ and FLASH-pytorch's GAU. It holds for this book's GAU, this book's "
        "FLASH and FLASH-pytorch's FLASH.")
    changed = {**recorded, "leak-peer-flash": claim("fails")}
    del changed["leak-peer-gau"]  # a record without the peer's GAU names only the others
    assert leak_sentence(changed) == (
        "The claim that appending tokens leaves a prefix's outputs unchanged fails for the printed $1/(ns)$, the printed "
        "FLASH divisor $(g-1)n/c$, the appendix's $\\mathrm{relu}^2(qk/n)$ and FLASH-pytorch's FLASH. It holds for this book's GAU and this "
        "book's FLASH.")


def test_counts_and_parameters_sentences():
    claims = {"count-gau": claim("holds"), "count-flash": claim("holds"), "count-transformer": claim("holds")}
    assert counts_sentence(claims) == ("The claim that the closed form gives the forward FLOPs per token counted on "
                                       "the module holds for GAU, FLASH and the Transformer++.")
    assert counts_sentence({**claims, "count-flash": claim("fails")}) == (
        "The claim that the closed form gives the forward FLOPs per token counted on the module holds for GAU and the "
        "Transformer++. It fails for FLASH.")
    cnt = {k: {"parameters": 10, "parameters_formula": 10} for k in ("gau", "flash", "transformer")}
    assert parameters_sentence(cnt) == "The parameters counted on GAU, FLASH and the Transformer++ equal the formula's."
    cnt["gau"]["parameters_formula"] = 11
    assert parameters_sentence(cnt) == ("The parameters counted on GAU differ from the formula's. The parameters "
                                        "counted on FLASH and the Transformer++ equal the formula's.")


def test_identities_sentence():
    claims = {"identity-is-glu": claim("holds"), "flash-global": claim("holds"), "flash-causal": claim("holds")}
    assert identities_sentence(claims) == (
        "The claim that the identity is exact to rounding in float64 holds for A = I giving the GLU layer, FLASH's "
        "chunked term giving full linear attention and FLASH's cumulative sum giving the explicit sum.")
    assert identities_sentence({**claims, "identity-is-glu": claim("fails")}) == (
        "The claim that the identity is exact to rounding in float64 fails for A = I giving the GLU layer. It holds "
        "for FLASH's chunked term giving full linear attention and FLASH's cumulative sum giving the explicit sum.")


def test_sizes_sentence_names_the_chunk_sizes_together_only_when_they_agree():
    claims = {"mha-matrix": claim("holds"), "gau-matrix": claim("holds"), "gau-lean-no-matrix": claim("holds"),
              **{f"flash-linear-state-c{c}": claim("holds") for c in (64, 128, 256)}}
    assert sizes_sentence(claims, ["64", "128", "256"]) == (
        "The claim that the saved tensors have exactly the source's sizes holds for multi-head attention's $bhn^2$, "
        "GAU's $bn^2$, and FLASH's chunk state $b(n/c)se$ at $c$ = 64, 128 and 256. The claim that the lean GAU keeps "
        "no $n\\times n$ tensor holds.")
    claims.update({"flash-linear-state-c128": claim("fails"), "gau-lean-no-matrix": claim("fails")})
    assert sizes_sentence(claims, ["64", "128", "256"]) == (
        "The claim that the saved tensors have exactly the source's sizes holds for multi-head attention's $bhn^2$, "
        "GAU's $bn^2$, FLASH's chunk state $b(n/c)se$ at $c$ = 64 and FLASH's chunk state $b(n/c)se$ at $c$ = 256. "
        "It fails for FLASH's chunk state $b(n/c)se$ at $c$ = 128. The claim that the lean GAU keeps no $n\\times n$ "
        "tensor fails.")


def test_batch_verdicts_as_recorded_and_all_holding():
    claims = {"quad-batch": claim("fails", 0.35031), "quad-batch-unfused": claim("fails", 1.3909),
              "quad-batch-base": claim("fails", 0.5289), "quad-batch-base-unfused": claim("holds", 2.0647)}
    assert batch_verdicts(claims) == (
        "The claim that FLASH-Quad fits about 2x the Transformer's batch fails against fused attention in the "
        "benchmark (0.35x), fused attention at the source's size (0.53x) and written-out attention in the benchmark "
        "(1.39x). It holds against written-out attention at the source's size (2.06x).")
    held = {k: claim("holds", 2.0) for k in claims}
    assert batch_verdicts(held) == (
        "The claim that FLASH-Quad fits about 2x the Transformer's batch holds against fused attention in the "
        "benchmark (2.00x), fused attention at the source's size (2.00x), written-out attention in the benchmark "
        "(2.00x) and written-out attention at the source's size (2.00x).")


def test_the_census_at_the_source_size_adds_only_what_the_batch_verdicts_do_not_state():
    mib = 2**20
    data = {"sizes": {"d": 768}, "batch": {"n": 1024, "flash-quad": 123 * mib, "flash-quad-lean": 97 * mib,
                                           "transformer": 65 * mib, "transformer-unfused": 254 * mib}}
    text = batch_sentence(data)
    assert text == (
        "At the source's own size, $d = 768$ and $n = 1024$ in float32 on the CPU, a sequence of its own saves 123.0 "
        "MiB in two GAU layers and 97.0 MiB in two lean ones. One Transformer++ layer saves 65.0 MiB with fused "
        "attention and 254.0 MiB with its attention written out. There, the lean FLASH-Quad fits 0.67x the batch of "
        "the fused Transformer++ and 2.62x that of the one with its attention written out.")
    assert f"{65 / 123:.2f}x" not in text and f"{254 / 123:.2f}x" not in text  # FLASH-Quad's: the verdicts give them
    old = batch_sentence({"sizes": {"d": 768}})
    assert old == "This record predates the batch census at base size (data version 2)."


def test_lean_batch_sentence():
    assert lean_batch_sentence(0.6149, 2.4351, "In the benchmark") == (
        "In the benchmark, the lean FLASH-Quad fits 0.61x the batch of the fused Transformer++ and 2.44x that of the "
        "one with its attention written out.")
