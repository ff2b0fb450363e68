"""The FLASH chapter's run of ``analysis check`` (:mod:`analysis.models.check`) on this book's layers, the sources' printed
normalisers, FLASH-pytorch's GAU and FLASH, and two tiny Hugging Face decoders decoded through their cache: which
leak, from where, and by what law; and the sentences that say which of the recorded claims hold and which fail."""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import torch
from torch import nn

from analysis.core.mathtext import math_markdown
from analysis.core.verify import verdict_phrase
from analysis.models.check import CheckReport, check_module
from analysis.models.gau import GAU, GAUConfig
from analysis.studies.display import Markdown
from analysis.studies.flash.experiments.flash_counts import EPS64, flash_printed, gau_total_length, leak_share
from analysis.studies.text import and_list, by_verdict

D, S, CHUNK = 16, 8, 8
LENGTHS = (32, 40, 48, 64, 80, 96)  # multiples of the chunk, which the printed FLASH form needs


class _Formula(nn.Module):
    """A printed normaliser as a module: ``form(layer, x)`` on a GAU layer's weights."""

    def __init__(self, layer: GAU, form: Callable[[GAU, torch.Tensor], torch.Tensor]) -> None:
        super().__init__()
        self.layer, self.form = layer, form

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.form(self.layer, x)


class _CausalMHA(nn.Module):
    """torch.nn.MultiheadAttention with a causal mask, taking a key-padding mask True at real tokens."""

    def __init__(self) -> None:
        super().__init__()
        self.mha = nn.MultiheadAttention(D, 2, batch_first=True)

    def forward(self, x: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
        n = x.shape[1]
        future = torch.ones(n, n, dtype=torch.bool, device=x.device).triu(1)
        return self.mha(x, x, x, attn_mask=future, key_padding_mask=None if mask is None else ~mask,
                        need_weights=False)[0]


@dataclass(frozen=True)
class Checked:
    """One module the chapter checks: the label its table gives it, its report, the name the prose gives it (maths
    between $ signs), and its chunk size where it has chunks (to say from which chunk on a leak starts)."""

    label: str
    report: CheckReport
    name: str
    chunk: int | None = None


def run_checks(seed: int = 0) -> list[Checked]:
    """``check_module`` on every module of the chapter's table (width 16, key size 8, chunks of 8); computed once per
    seed and process (the checks are deterministic, and the chapter's facts and tests ask for them repeatedly)."""
    return list(_run_checks(seed))


@functools.lru_cache(maxsize=4)
def _run_checks(seed: int) -> tuple[Checked, ...]:
    torch.manual_seed(seed)
    gau = GAU(GAUConfig(d=D, e=2 * D, s=S, causal=True, rope=True))
    flash = GAU(GAUConfig(d=D, e=2 * D, s=S, causal=True, rope=True, chunk=CHUNK))
    # (table label, prose name, module, chunk size)
    ours: list[tuple[str, str, nn.Module, int | None]] = [
        ("this book's GAU, relu²/(ts) (lean path, the default)", "this book's lean GAU", gau, None),
        ("this book's GAU, dense path", "this book's dense GAU",
         GAU(GAUConfig(d=D, e=2 * D, s=S, causal=True, backend="dense")), None),
        ("this book's GAU, relu²(qk/t)", "this book's GAU with $\\mathrm{relu}^2(qk/t)$",
         GAU(GAUConfig(d=D, e=2 * D, s=S, causal=True, norm="relu2_n2")), None),
        ("this book's GAU, softmax with log₅₁₂ t", "this book's GAU with softmax and $\\log_{512} t$",
         GAU(GAUConfig(d=D, e=2 * D, s=S, causal=True, norm="softmax_log512")), None),
        ("this book's FLASH", "this book's FLASH", flash, CHUNK),
    ]
    rows = [Checked(label, check_module(m, target=label, lengths=LENGTHS, mask="key-padding", mask_arg="key_mask",
                                        seed=seed), name, chunk) for label, name, m, chunk in ours]
    printed = [("source as printed: relu²(qk)/(ns)", "the printed $1/(ns)$",
                _Formula(gau, lambda g, x: gau_total_length(g, x, "printed")), None),
               ("paper appendix: relu²(qk/n)", "the appendix's $\\mathrm{relu}^2(qk/n)$",
                _Formula(gau, lambda g, x: gau_total_length(g, x, "appendix")), None),
               ("source as printed: FLASH 1/((g−1)n/c)", "the printed FLASH normaliser",
                _Formula(flash, flash_printed), CHUNK)]
    rows += [Checked(label, check_module(m, target=label, d=D, lengths=LENGTHS, seed=seed), name, chunk)
             for label, name, m, chunk in printed]
    rows.append(Checked("torch.nn.MultiheadAttention, causal mask",
                        check_module(_CausalMHA(), target="mha", lengths=LENGTHS, mask="key-padding", seed=seed),
                        "`torch.nn.MultiheadAttention`"))
    try:
        from flash_pytorch import FLASH as PeerFLASH
        from flash_pytorch import GAU as PeerGAU
    except ImportError:
        return tuple(rows)
    peers = [("FLASH-pytorch GAU (causal)", "FLASH-pytorch's GAU", PeerGAU(dim=D, query_key_dim=S, causal=True), None),
             ("FLASH-pytorch FLASH (causal)", "FLASH-pytorch's FLASH",
              PeerFLASH(dim=D, group_size=CHUNK, query_key_dim=S, causal=True), CHUNK)]
    rows += [Checked(label, check_module(m, target=label, lengths=LENGTHS, mask="key-padding", seed=seed), name, chunk)
             for label, name, m, chunk in peers]
    return tuple(rows + _hf_rows(seed))


def _hf_rows(seed: int) -> list[Checked]:
    """GPT-2 and Llama of width 16, key size 8 and two layers, random weights built from their configs (nothing is
    downloaded), checked as ``--kind hf``: every check, decoding through ``past_key_values`` included; none where
    transformers is not installed."""
    import warnings

    try:
        with warnings.catch_warnings():  # its progress bars look for notebook widgets the book does not install
            warnings.filterwarnings("ignore", message="IProgress not found")
            from transformers import GPT2Config, GPT2LMHeadModel, LlamaConfig, LlamaForCausalLM
    except ImportError:  # an optional extra: the rows are left out without it
        return []
    torch.manual_seed(seed)
    gpt2 = GPT2LMHeadModel(GPT2Config(vocab_size=64, n_embd=D, n_layer=2, n_head=D // S, n_positions=128,
                                      bos_token_id=0, eos_token_id=0))
    llama = LlamaForCausalLM(LlamaConfig(vocab_size=64, hidden_size=D, intermediate_size=2 * D, num_hidden_layers=2,
                                         num_attention_heads=D // S, num_key_value_heads=1,
                                         max_position_embeddings=128))
    return [Checked(label, check_module(m, "hf", target=label, lengths=LENGTHS, seed=seed), name)
            for label, name, m in (("Hugging Face GPT-2, 2 layers (learned positions)", "the Hugging Face GPT-2", gpt2),
                                   ("Hugging Face Llama, 2 layers (rotary, grouped keys)", "the Hugging Face Llama",
                                    llama))]


def _cell(report: CheckReport, check: str, dtype: str) -> str:
    found = [r for r in report.results if r.check == check and r.dtype == dtype and r.mode == "eval"]
    if not found:
        return {"padding": "no mask", "decoding": "no cache"}.get(check, "—")
    r = found[0]
    coarser = "" if r.computes_in is None else f"; held to {r.computes_in}'s threshold, which it computes in"
    if r.passed:
        return f"passes ({'exactly 0' if r.worst == 0 else f'{r.worst:.0e}'}{coarser})"
    return f"**leaks** {r.worst:.2g} from t = {r.first_position}{f' ({coarser[2:]})' if coarser else ''}"


CELLS = (("causal", "float64"), ("causal", "float32"), ("padding", "float64"), ("decoding", "float64"))


def check_table(rows: list[Checked]) -> Markdown:
    """Per module: the causal check in float64 and float32, the padding check and incremental decoding through the
    cache in float64 (eval mode), and the law of the leak."""
    out = ["| module | causal, float64 | causal, float32 | padding, float64 | decoding through the cache, float64 "
           "| the leak's law |",
           "|---|---|---|---|---|---|"]
    for row in rows:
        rep = row.report
        laws = sorted({(w.law or "none of the known laws").replace("^2", "²") for w in rep.laws})
        cells = " | ".join(_cell(rep, check, dtype) for check, dtype in CELLS)
        out.append(f"| {row.label} | {cells} | {', '.join(laws) if laws else '—'} |")
    return Markdown("\n".join(out))


def check_facts(rows: list[Checked]) -> dict[str, Any]:
    """The table, which modules leak and by what law (:func:`check_sentence`), and the threshold and lengths the
    checks used."""
    first = rows[0].report.results
    f64 = next(r for r in first if r.dtype == "float64")
    f32 = next(r for r in first if r.dtype == "float32")
    return {
        "check_table": check_table(rows),
        "check_verdicts": Markdown(math_markdown(check_sentence(rows))),
        "check_thresholds": f"{f64.threshold:.1e} in float64 and {f32.threshold:.1e} in float32",
        "check_lengths": f"a prefix of {LENGTHS[0]} tokens extended to {', '.join(map(str, LENGTHS[1:]))}",
    }


NUMBER_WORDS = ("no", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven",
                "twelve")
ORDINALS = ("first", "second", "third", "fourth", "fifth", "sixth", "seventh", "eighth", "ninth", "tenth")


def number_words(k: int) -> str:
    """A count in words up to twelve, in digits above: 'four', '13'."""
    return NUMBER_WORDS[k] if 0 <= k < len(NUMBER_WORDS) else str(k)


def law_text(law: str | None) -> str:
    """A length law as :func:`analysis.models.check.fit_length_law` names it, in words with its maths between $ signs:
    '1/n (the total length)' gives '$1/n$'; a length padded to a multiple of c says so; None: 'no known law'."""
    if law is None:
        return "no known law"
    head, _, detail = law.partition(" (")
    if head.startswith("a log n"):
        return "a $\\log n$ factor"
    if "n_pad" not in head:
        return f"${head}$"
    multiple = re.search(r"multiple of (\d+)", detail)
    padded = f" padded to a multiple of {multiple.group(1)}" if multiple else " padded"
    pad = "n_{\\mathrm{pad}}"
    return f"${head.replace('n_pad', pad)}$, with ${pad}$ the length{padded}"


def _leak(row: Checked) -> tuple[tuple[str, ...], str]:
    """The checks a leaking module fails, in the report's order, and how it leaks: ' as <law>', or ' in the <check>
    check as <law>' for each check where the checks' laws differ; and ' from its <k>th chunk on' or ' from position
    t on' where the first failing position is not the first."""
    rep = row.report
    failing = [r for r in rep.results if not r.passed]
    checks = tuple(dict.fromkeys(r.check for r in failing))
    laws = {w.check: law_text(w.law) for w in rep.laws}
    named = [c for c in checks if c in laws]
    if len({laws[c] for c in named}) == 1:
        how = f" as {laws[named[0]]}"
    else:
        how = (" " + and_list([f"in the {c} check as {laws[c]}" for c in named])) if named else ""
    # where each check first fails: its first failing run, the one its law was fitted on
    first = min(next(r for r in failing if r.check == c).first_position or 0 for c in checks)
    if first == 0:
        return checks, how
    if row.chunk and first % row.chunk == 0 and first // row.chunk < len(ORDINALS):
        return checks, f"{how} from its {ORDINALS[first // row.chunk]} chunk on"
    return checks, f"{how} from position {first} on"


def check_sentence(rows: Sequence[Checked]) -> str:
    """How many of the checked modules leak, and per group of modules failing the same checks, which leak, by the law
    each check fitted and from where: 'Four of the 13 modules leak, and the other nine pass. In the causal check, the
    printed $1/(ns)$ leaks as $1/n$, ...' (maths between $ signs)."""
    leaking = [row for row in rows if not row.report.passed]
    total, k = len(rows), len(leaking)
    every = "The module" if total == 1 else "Both modules" if total == 2 else f"All {number_words(total)} modules"
    if k == 0:
        return f"{every} {'pass' if total > 1 else 'passes'} every check."
    head = (f"{every} {'leak' if total > 1 else 'leaks'}." if k == total else
            f"{number_words(k).capitalize()} of the {number_words(total)} modules {'leaks' if k == 1 else 'leak'}, "
            f"and the other {number_words(total - k)} {'passes' if total - k == 1 else 'pass'}.")
    groups: dict[tuple[str, ...], list[tuple[str, str]]] = {}
    for row in leaking:
        checks, how = _leak(row)
        groups.setdefault(checks, []).append((row.name, how))
    out = [head]
    for checks, items in groups.items():
        where = (f"In the {checks[0]} check" if len(checks) == 1 else
                 f"In both the {checks[0]} and the {checks[1]} check" if len(checks) == 2 else
                 f"In each of the {and_list(list(checks))} checks")
        parts = [f"{items[0][0]} leaks{items[0][1]}"] + [f"{name}{how or ' leaks'}" for name, how in items[1:]]
        out.append(f"{where}, {and_list(parts)}.")
    return " ".join(out)


def unit_gate_is_attention(seed: int = 0, n: int = 24) -> float:
    """Relative gap (float64) between this book's GAU with its gate forced to U = 1 and single-head softmax attention
    computed independently (``scaled_dot_product_attention`` on the layer's own Q, K and V, then W_o).

    U = 1 is set through the weights: the gate's rows of the input projection are zeroed and its bias set to the b
    with silu(b) = 1, so the layer's own forward pass computes (1 ⊙ A V) W_o."""
    import torch.nn.functional as F
    from scipy.optimize import brentq

    torch.manual_seed(seed)
    layer = GAU(GAUConfig(d=D, e=2 * D, s=S, norm="softmax", backend="dense")).double()
    e = layer.cfg.e
    b_one = brentq(lambda b: b / (1 + torch.exp(torch.tensor(-b, dtype=torch.float64)).item()) - 1, 0.5, 2.0,
                   xtol=1e-15)
    x = torch.randn(2, n, D, dtype=torch.float64, generator=torch.Generator().manual_seed(seed))
    with torch.no_grad():
        layer.to_uv.weight[:e] = 0
        layer.to_uv.bias[:e] = b_one
        out = layer(x)
        v = F.silu(F.linear(x, layer.to_uv.weight[e:], layer.to_uv.bias[e:]))
        q, k = layer.qk(F.silu(layer.to_z(x)))
        ref = layer.to_out(F.scaled_dot_product_attention(q, k, v))
    return float((out - ref).abs().max() / ref.abs().max())


def peer_deviations(seed: int = 0) -> dict[str, float]:
    """Three ways FLASH-pytorch (as installed) departs from what its arguments and the source say, each computed at
    width 16, key size 8 (empty when it is not installed):

    * ``rel_pos_bias_change``: its GAU built with ``rel_pos_bias=False`` still adds the T5 relative-position bias:
      the largest relative change of the output when the bias module is removed by hand (0 if the flag worked);
    * ``linear_growth``: its causal FLASH divides the linear term by the group size, not by the keys summed: on a
      sequence of identical tokens, the output's change from the first group to the third over its change from the
      first to the second (2: the sum over earlier groups grows with them; 1 for a normaliser by the keys summed);
    * ``padding_change``: its bidirectional GAU divides the scores by the padded length: the relative change of 128
      real tokens' attention output (output bias set to 0) when masked padding takes the length to 256
      (1 - (128/256)^2 = 0.75 for relu^2 of scores over n; 0 if padding were ignored)."""
    try:
        from flash_pytorch import FLASH as PeerFLASH
        from flash_pytorch import GAU as PeerGAU
    except ImportError:
        return {}
    torch.manual_seed(seed)
    gen = torch.Generator().manual_seed(seed)
    out: dict[str, float] = {}
    with torch.no_grad():
        gau = PeerGAU(dim=D, query_key_dim=S, causal=True, add_residual=False, rel_pos_bias=False).double()
        x = torch.randn(1, 32, D, dtype=torch.float64, generator=gen)
        with_bias = gau(x)
        gau.rel_pos_bias = None
        out["rel_pos_bias_change"] = float((gau(x) - with_bias).abs().max() / with_bias.abs().max())

        flash = PeerFLASH(dim=D, group_size=CHUNK, query_key_dim=S, causal=True).double()
        same = torch.randn(1, 1, D, dtype=torch.float64, generator=gen).expand(1, 3 * CHUNK, D)
        y = flash(same)
        first, second, third = (y[:, g * CHUNK:(g + 1) * CHUNK] for g in range(3))
        out["linear_growth"] = float((third - first).norm() / (second - first).norm())

        real, padded = 128, 256
        bidir = PeerGAU(dim=D, query_key_dim=S, causal=False, add_residual=False).double()
        bidir.to_out[0].bias.zero_()
        z = torch.randn(1, padded, D, dtype=torch.float64, generator=gen)
        ref = bidir(z[:, :real])
        mask = torch.zeros(1, padded, dtype=torch.bool)
        mask[:, :real] = True
        moved = bidir(z, mask=mask)[:, :real]
        out["padding_change"] = float((moved - ref).abs().max() / ref.abs().max())
    return out


UNIT_GATE_TOLERANCE = 1e3 * EPS64  # 1000 float64 ulps, the tolerance of the identity claims of flash-counts


def unit_gate_sentence(gap: float) -> str:
    """Whether GAU with its gate forced to U = 1 is single-head attention to rounding, by the relative gap
    :func:`unit_gate_is_attention` measures against :data:`UNIT_GATE_TOLERANCE` (maths between $ signs)."""
    head = "With the gate forced to $U = 1$ and softmax scores, the layer"
    if gap <= UNIT_GATE_TOLERANCE:
        return f"{head} is single-head attention to rounding, with a relative gap of {gap:.1e} in float64."
    return (f"{head} is not single-head attention: their relative gap of {gap:.1e} in float64 exceeds the "
            f"{UNIT_GATE_TOLERANCE:.1e} of rounding.")


def peer_facts(deviations: dict[str, float], unit_gate_gap: float) -> dict[str, Any]:
    """The chapter's list of FLASH-pytorch's departures (:func:`peer_deviations`), each with its computed number, and
    the U = 1 check (:func:`unit_gate_is_attention`, :func:`unit_gate_sentence`)."""
    facts: dict[str, Any] = {"unit_gate": Markdown(math_markdown(unit_gate_sentence(unit_gate_gap)))}
    if not deviations:
        facts["peer_list"] = Markdown("FLASH-pytorch is not installed: its departures were not computed here.")
        return facts
    facts["peer_list"] = Markdown("\n".join([
        f"- Its GAU ignores `rel_pos_bias=False`: it builds the T5 relative-position bias whatever the flag says and "
        f"adds it to the scores (removing the bias module by hand changes the output by "
        f"{deviations['rel_pos_bias_change']:.3g} of its largest entry).",
        f"- Its causal FLASH divides the linear term by the group size, not by the number of keys it sums: on a "
        f"sequence of identical tokens the output moves {deviations['linear_growth']:.3f} times as far from the first "
        f"group to the third as to the second (1 under a normaliser by the keys summed). It does not leak, but the "
        f"linear term grows with the number of earlier groups.",
        f"- Its GAU divides the scores by the padded length: with 128 real tokens of 256 (bidirectional, masked "
        f"padding) the real tokens' attention output changes by {deviations['padding_change']:.4g} of its largest "
        f"entry, which is $1 - (128/256)^2$.",
    ]))
    return facts


def phrase(claim: Any) -> str:
    """A claim's verdict as a predicate for prose: 'holds', 'fails', 'is inconclusive', 'holds within 3.7%'."""
    return verdict_phrase(claim.verdict_text())


def verdict_sentence(claim: str, named: Sequence[tuple[str, str]], scope: str = "for") -> str:
    """'The claim that <claim> fails for A and B. It holds for C.': one sentence per verdict phrase of the (name,
    phrase) pairs, naming what each verdict is for ('' for no names: 'The claim that <claim> holds.')."""
    out = []
    for verdict, names in by_verdict(named):
        subject = f"The claim that {claim}" if not out else "It"
        which = f" {scope} {and_list(names)}" if any(names) else ""
        out.append(f"{subject} {verdict}{which}.")
    return " ".join(out)


# the leak claims of experiment flash-counts (``leak-<variant>``) by the names the prose gives them, those the
# source prints first
LEAK_NAMES = {"gau-printed": "the printed $1/(ns)$", "flash-printed": "the printed FLASH divisor $(g-1)n/c$",
              "gau-appendix": "the appendix's $\\mathrm{relu}^2(qk/n)$", "peer-gau": "FLASH-pytorch's GAU",
              "gau-ours": "this book's GAU", "flash-ours": "this book's FLASH", "peer-flash": "FLASH-pytorch's FLASH"}


def leak_sentence(claims: Mapping[str, Any]) -> str:
    """Which normalisers leave a prefix's outputs unchanged as tokens are appended, and which do not, by the verdicts
    of the ``leak-*`` claims among ``claims`` (key: claim; maths between $ signs)."""
    named = [(name, phrase(claims[f"leak-{v}"])) for v, name in LEAK_NAMES.items() if f"leak-{v}" in claims]
    return verdict_sentence("appending tokens leaves a prefix's outputs unchanged", named)


def peer_leak_sentence(claim: Any, leak: Mapping[str, Any]) -> str:
    """How well the share D read off the shortest extension predicts FLASH-pytorch's causal GAU leak at the longest,
    and the verdict of that corrected prediction, from the ``leak-peer-gau`` claim (None where the run has none) and
    the run's ``leak`` data (maths between $ signs)."""
    changes = leak["relative_change"].get("peer-gau")
    share = None if changes is None else leak_share(changes, leak["lengths"], leak["prefix"], 2)
    if claim is None or claim.corrected is None or share is None:
        return "The run records no leak of FLASH-pytorch's GAU, so no $D$ is read off it."
    d, n0 = share
    gap = abs(claim.measured - claim.corrected) / abs(claim.measured)
    how = "exactly" if gap == 0 else f"to a relative {gap:.1e}"
    return (f"Without the residual connection, $D = {d:.4g}$ read off the extension to $n = {n0}$ predicts the change "
            f"at $n = {max(leak['lengths'])}$ {how}. The corrected prediction of the claim on the peer's causal leak "
            f"{verdict_phrase(str(claim.corrected_verdict))}.")
