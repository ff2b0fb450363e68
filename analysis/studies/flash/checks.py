"""The FLASH chapter's run of ``analysis check`` (:mod:`analysis.check`) on this book's layers, the sources' printed
normalisers and FLASH-pytorch's GAU and FLASH: which leak, from where, and by what law."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch
from IPython.display import Markdown
from torch import nn

from analysis.check import CheckReport, check_module
from analysis.models.gau import GAU, GAUConfig
from analysis.studies.flash.experiments.flash_counts import flash_printed, gau_total_length

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
    """One module the chapter checks, by the label its table gives it, and its report."""

    label: str
    report: CheckReport


def run_checks(seed: int = 0) -> list[Checked]:
    """``check_module`` on every module of the chapter's table (width 16, key size 8, chunks of 8)."""
    torch.manual_seed(seed)
    gau = GAU(GAUConfig(d=D, e=2 * D, s=S, causal=True, rope=True))
    flash = GAU(GAUConfig(d=D, e=2 * D, s=S, causal=True, rope=True, chunk=CHUNK))
    ours: list[tuple[str, nn.Module]] = [
        ("this book's GAU, relu²/(ts) (lean path, the default)", gau),
        ("this book's GAU, dense path", GAU(GAUConfig(d=D, e=2 * D, s=S, causal=True, backend="dense"))),
        ("this book's GAU, relu²(qk/t)", GAU(GAUConfig(d=D, e=2 * D, s=S, causal=True, norm="relu2_n2"))),
        ("this book's GAU, softmax with log₅₁₂ t", GAU(GAUConfig(d=D, e=2 * D, s=S, causal=True,
                                                               norm="softmax_log512"))),
        ("this book's FLASH", flash),
    ]
    rows = [Checked(label, check_module(m, target=label, lengths=LENGTHS, mask="key-padding", mask_arg="key_mask",
                                        seed=seed)) for label, m in ours]
    printed = [("source as printed: relu²(qk)/(ns)", _Formula(gau, lambda g, x: gau_total_length(g, x, "printed"))),
               ("paper appendix: relu²(qk/n)", _Formula(gau, lambda g, x: gau_total_length(g, x, "appendix"))),
               ("source as printed: FLASH 1/((g−1)n/c)", _Formula(flash, flash_printed))]
    rows += [Checked(label, check_module(m, target=label, d=D, lengths=LENGTHS, seed=seed)) for label, m in printed]
    rows.append(Checked("torch.nn.MultiheadAttention, causal mask",
                        check_module(_CausalMHA(), target="mha", lengths=LENGTHS, mask="key-padding", seed=seed)))
    try:
        from flash_pytorch import FLASH as PeerFLASH
        from flash_pytorch import GAU as PeerGAU
    except ImportError:
        return rows
    peers = [("FLASH-pytorch GAU (causal)", PeerGAU(dim=D, query_key_dim=S, causal=True)),
             ("FLASH-pytorch FLASH (causal)", PeerFLASH(dim=D, group_size=CHUNK, query_key_dim=S, causal=True))]
    rows += [Checked(label, check_module(m, target=label, lengths=LENGTHS, mask="key-padding", seed=seed))
             for label, m in peers]
    return rows


def _cell(report: CheckReport, check: str, dtype: str) -> str:
    found = [r for r in report.results if r.check == check and r.dtype == dtype]
    if not found:
        return "no mask"
    r = found[0]
    if r.passed:
        return "passes (exactly 0)" if r.worst == 0 else f"passes ({r.worst:.0e})"
    return f"**leaks** {r.worst:.2g} from t = {r.first_position}"


def check_table(rows: list[Checked]) -> Markdown:
    """Per module: the causal and padding checks in float64 and float32, and the law of the leak."""
    out = ["| module | causal, float64 | causal, float32 | padding, float64 | the leak's law |",
           "|---|---|---|---|---|"]
    for row in rows:
        rep = row.report
        laws = sorted({(w.law or "none of the known laws").replace("^2", "²") for w in rep.laws})
        out.append(f"| {row.label} | {_cell(rep, 'causal', 'float64')} | {_cell(rep, 'causal', 'float32')} | "
                   f"{_cell(rep, 'padding', 'float64')} | {', '.join(laws) if laws else '—'} |")
    return Markdown("\n".join(out))


def check_facts(rows: list[Checked]) -> dict[str, Any]:
    """The table, how many modules leak, and the threshold and lengths the checks used."""
    by_label = {r.label: r.report for r in rows}
    leaking = [r.label for r in rows if not r.report.passed]
    first = rows[0].report.results
    f64 = next(r for r in first if r.dtype == "float64")
    f32 = next(r for r in first if r.dtype == "float32")
    peer = by_label.get("FLASH-pytorch GAU (causal)")
    return {
        "check_table": check_table(rows),
        "check_leaking": f"{len(leaking)} of the {len(rows)} modules",
        "check_thresholds": f"{f64.threshold:.1e} in float64 and {f32.threshold:.1e} in float32",
        "check_lengths": f"a prefix of {LENGTHS[0]} tokens extended to {', '.join(map(str, LENGTHS[1:]))}",
        "check_peer_law": (peer.laws[0].law or "none of the known laws").replace("^2", "²")
        if peer is not None and peer.laws
        else "not checked (FLASH-pytorch is not installed)",
    }
