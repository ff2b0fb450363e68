"""FLASH-Quad, FLASH and a Transformer++ counted, and the causal normaliser checked (kexue.fm/archives/8934).

Counts: parameters and forward FLOPs per token of the book's GAU, FLASH and Transformer++ (MHA + SwiGLU) layers
against the closed forms of :mod:`analysis.theory.flash_counts`, FLOPs measured with torch's ``FlopCounterMode``
(attention computed explicitly, the path that tracks the softmax gradient: the counter does not see the CPU kernel
of ``scaled_dot_product_attention``).

Normaliser: in a decoder a position's output must not change when tokens are appended after it. For every
variant the largest relative change of the first ``prefix`` positions' outputs is measured in float64 as the
total length grows: this book's GAU and FLASH (rows normalised by the keys they see), the source's printed
1/(n s) and 1/((g - 1) n / c) with n the total length, the paper appendix's relu^2(qk / n), and the public
implementation (FLASH-pytorch) as installed. Padding: real tokens' outputs against the padded length.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch
import torch.nn.functional as F
from torch.utils.flop_counter import FlopCounterMode

from analysis.core.experiment import Workload
from analysis.core.verify import Claim
from analysis.models.gau import GAU, GAUConfig
from analysis.models.lm import Attention, FeedForward, ModelConfig
from analysis.theory import flash_counts as fc

NAME = "flash-counts"
DATA_VERSION = 2  # raised when the layout of run()'s data changes
SOURCE = "Su 2022, kexue.fm/archives/8934"
EPS64 = float(torch.finfo(torch.float64).eps)
# the leak variants: ids key the data and the claims; the names are the reader's, maths in LaTeX
VARIANTS: dict[str, str] = {
    "gau-ours": "this book's GAU (rows / keys seen)",
    "flash-ours": "this book's FLASH (linear / keys summed)",
    "gau-printed": "source as printed: $\\mathrm{relu}^2(qk)/(ns)$",
    "gau-appendix": "paper appendix: $\\mathrm{relu}^2(qk/n)$",
    "flash-printed": "source as printed: FLASH $1/((g-1)\\,n/c)$",
    "peer-gau": "FLASH-pytorch GAU (causal)",
    "peer-flash": "FLASH-pytorch FLASH (causal)",
}
OURS = ("gau-ours", "flash-ours")  # the normalisers that count the keys a row sees


@dataclass(frozen=True)
class Config:
    """Sizes of the counted layers, the widths of the parameter comparison, and the leak test's lengths."""

    d: int
    s: int
    chunk: int
    count_length: int
    widths: tuple[int, ...]
    leak_d: int
    prefix: int
    lengths: tuple[int, ...]
    seed: int = 0


CONFIGS: dict[str, Config] = {
    "smoke": Config(d=32, s=16, chunk=8, count_length=32, widths=(256, 4096), leak_d=16, prefix=8, lengths=(8, 16, 32)),
    "cpu": Config(d=256, s=128, chunk=64, count_length=512, widths=(256, 512, 768, 1024, 2048, 4096), leak_d=64,
                  prefix=16, lengths=(16, 32, 64, 128, 256, 512, 1024)),
    "gpu": Config(d=1024, s=128, chunk=256, count_length=2048, widths=(256, 512, 768, 1024, 2048, 4096, 8192),
                  leak_d=128, prefix=64, lengths=(64, 128, 256, 512, 1024, 2048, 4096)),
}


def _flops(module: torch.nn.Module, x: torch.Tensor) -> int:
    with FlopCounterMode(display=False) as counter:
        module(x)
    return int(counter.get_total_flops())


def _params(*modules: torch.nn.Module) -> int:
    return sum(p.numel() for m in modules for p in m.parameters())


def counts(cfg: Config) -> dict[str, Any]:
    """Measured and closed-form parameters and forward FLOPs per token of one GAU, FLASH and Transformer++ layer."""
    d, e, s, n, c = cfg.d, 2 * cfg.d, cfg.s, cfg.count_length, cfg.chunk
    x = torch.randn(1, n, d, generator=torch.Generator().manual_seed(cfg.seed))
    # the dense path: the formulas count the full n x n products (the lean causal path skips about half of them)
    gau = GAU(GAUConfig(d=d, e=e, s=s, causal=True, backend="dense"))
    flash = GAU(GAUConfig(d=d, e=e, s=s, causal=True, chunk=c))
    mcfg = ModelConfig(d=d, heads=max(1, d // 64), block="transformer", ffn="swiglu")
    att, ffn = Attention(mcfg), FeedForward(mcfg)
    att.track_softmax_gradient = True  # explicit matrix products, which the flop counter sees (not the CPU SDPA kernel)

    def tfm(t: torch.Tensor) -> torch.Tensor:
        return ffn(att(t))

    rows = {
        "gau": (fc.gau_counts(d, e, s, n), _params(gau), _flops(gau, x)),
        "flash": (fc.flash_counts(d, e, s, n, c), _params(flash), _flops(flash, x)),
        "transformer": (fc.transformer_counts(d, n), _params(att, ffn), _flops(tfm, x)),  # type: ignore[arg-type]
    }
    out: dict[str, Any] = {"d": d, "e": e, "s": s, "n": n, "chunk": c}
    for key, (pred, params, flops) in rows.items():
        out[key] = {"parameters": params, "parameters_formula": pred.parameters, "flops_per_token": flops / n,
                    "flops_formula": pred.flops, "linear_formula": pred.linear_flops, "length_formula": pred.length_flops}
    out["two_gau_over_transformer"] = {str(w): fc.two_gau_over_transformer(w, s) for w in cfg.widths}
    out["quadratic_ratio_per_layer"] = fc.quadratic_ratio_per_layer(768, 1536, 128)
    out["flash_break_even"] = {str(ch): fc.flash_break_even_length(1536, 128, ch) for ch in (64, 128, 256)}
    return out


# --- the normaliser: reference forms of GAU / FLASH with a chosen length normalisation ----------------------------


def _gau_parts(layer: GAU, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    u, v = F.silu(layer.to_uv(x)).chunk(2, dim=-1)
    return u, v, F.silu(layer.to_z(x))


def gau_total_length(layer: GAU, x: torch.Tensor, rule: str) -> torch.Tensor:
    """Causal GAU normalised by the total length n: 'printed' relu^2(qk)/(n s), 'appendix' relu^2(qk/n)."""
    u, v, z = _gau_parts(layer, x)
    q, k = layer.qk(z)
    n, s = x.shape[1], q.shape[-1]
    logits = q @ k.transpose(-1, -2)
    a = F.relu(logits) ** 2 / (n * s) if rule == "printed" else F.relu(logits / n) ** 2
    a = a * torch.ones(n, n, dtype=torch.bool, device=x.device).tril()
    return layer.to_out(u * (a @ v))


def flash_printed(layer: GAU, x: torch.Tensor) -> torch.Tensor:
    """Causal FLASH with the source's printed linear normaliser 1/((g - 1) n / c), n the total length."""
    u, v, z = _gau_parts(layer, x)
    c = int(layer.cfg.chunk or 1)
    b, n, s = z.shape
    groups = n // c
    qq, kq, ql, kl = (t.reshape(b, groups, c, s) for t in layer.qk(z))
    vv = v.reshape(b, groups, c, -1)
    mask = torch.ones(c, c, dtype=torch.bool, device=x.device).tril()
    keys = mask.sum(-1, keepdim=True).to(x.dtype)
    quad = (F.relu(qq @ kq.transpose(-1, -2)) ** 2 / (keys * s) * mask) @ vv
    kv = kl.transpose(-1, -2) @ vv
    before = kv.cumsum(dim=1) - kv
    g_index = torch.arange(1, groups + 1, dtype=x.dtype, device=x.device)
    norm = ((g_index - 1) * n / c).clamp(min=1)[None, :, None, None]
    return layer.to_out(u * (quad + (ql @ before) / norm).reshape(b, n, -1))


def _peer() -> Any:
    """FLASH-pytorch's GAU and FLASH classes (None when not installed)."""
    try:
        from flash_pytorch import FLASH, GAU as PeerGAU
    except ImportError:
        return None
    return PeerGAU, FLASH


def leak(cfg: Config) -> dict[str, Any]:
    """Relative change of the first ``prefix`` outputs when the sequence grows from ``prefix`` to each length."""
    torch.manual_seed(cfg.seed)
    d, s, c = cfg.leak_d, max(2, cfg.leak_d // 2), max(1, cfg.prefix // 4)  # the prefix spans 4 chunks
    ours = GAU(GAUConfig(d=d, e=2 * d, s=s, causal=True)).double()
    ours_flash = GAU(GAUConfig(d=d, e=2 * d, s=s, causal=True, chunk=c)).double()
    variants: dict[str, Any] = {
        "gau-ours": ours,
        "flash-ours": ours_flash,
        "gau-printed": lambda t: gau_total_length(ours, t, "printed"),
        "gau-appendix": lambda t: gau_total_length(ours, t, "appendix"),
        "flash-printed": lambda t: flash_printed(ours_flash, t),
    }
    peer = _peer()
    if peer is not None:
        peer_gau, peer_flash = peer
        variants["peer-gau"] = peer_gau(dim=d, query_key_dim=s, causal=True, add_residual=False).double()
        variants["peer-flash"] = peer_flash(dim=d, group_size=c, query_key_dim=s, causal=True).double()
    x = torch.randn(1, max(cfg.lengths), d, dtype=torch.float64, generator=torch.Generator().manual_seed(cfg.seed))
    rows = {}
    with torch.no_grad():
        for variant, fn in variants.items():
            ref = fn(x[:, : cfg.prefix])[:, : cfg.prefix]
            changes = [float((fn(x[:, :length])[:, : cfg.prefix] - ref).abs().max() / ref.abs().max())
                       for length in cfg.lengths]
            rows[variant] = changes
    return {"prefix": cfg.prefix, "lengths": list(cfg.lengths), "relative_change": rows, "peer_installed": peer is not None}


def flash_reference(layer: GAU, x: torch.Tensor, causal: bool) -> torch.Tensor:
    """FLASH written out chunk by chunk with explicit sums: quadratic relu^2 inside chunk g over the keys it sees,
    plus Q_g^lin sum_h K_h^lin^T V_h over all chunks / n (bidirectional) or over h < g / ((g - 1) c) (causal)."""
    u, v, z = _gau_parts(layer, x)
    c = int(layer.cfg.chunk or 1)
    n, s = x.shape[1], z.shape[-1]
    qq, kq, ql, kl = layer.qk(z)
    outs = []
    for g in range(n // c):
        rows = slice(g * c, (g + 1) * c)
        a = F.relu(qq[:, rows] @ kq[:, rows].transpose(-1, -2)) ** 2
        if causal:
            a = a * torch.ones(c, c, dtype=torch.bool).tril() / (torch.arange(1, c + 1, dtype=x.dtype)[:, None] * s)
        else:
            a = a / (c * s)
        quad = a @ v[:, rows]
        hs = range(g) if causal else range(n // c)
        kv = sum((kl[:, h * c:(h + 1) * c].transpose(-1, -2) @ v[:, h * c:(h + 1) * c] for h in hs),
                 torch.zeros(x.shape[0], s, v.shape[-1], dtype=x.dtype))
        seen = max(1, g * c) if causal else n
        outs.append(quad + ql[:, rows] @ kv / seen)
    return layer.to_out(u * torch.cat(outs, dim=1))


def identities(cfg: Config) -> dict[str, float]:
    """Relative gaps (float64) of the source's identities: A = I is a GLU FFN, A = 1 1^T is unnormalised linear
    attention, and FLASH's chunked global and causal cumulative-sum terms are the full sums they replace."""
    torch.manual_seed(cfg.seed)
    d, n = cfg.leak_d, 4 * cfg.prefix
    x = torch.randn(2, n, d, dtype=torch.float64, generator=torch.Generator().manual_seed(cfg.seed + 2))
    layer = GAU(GAUConfig(d=d, e=2 * d, s=max(2, d // 2), backend="dense")).double()  # A is replaced below

    def rel(a: torch.Tensor, b: torch.Tensor) -> float:
        return float((a - b).abs().max() / b.abs().max())

    u, v, _ = _gau_parts(layer, x)
    glu = F.linear(F.silu(F.linear(x, layer.to_uv.weight[: 2 * d], layer.to_uv.bias[: 2 * d])) *
                   F.silu(F.linear(x, layer.to_uv.weight[2 * d :], layer.to_uv.bias[2 * d :])),
                   layer.to_out.weight, layer.to_out.bias)
    ones = layer.to_out(u * v.sum(dim=1, keepdim=True))
    out: dict[str, float] = {}
    with torch.no_grad():
        for key, a_fn, want in (("identity_is_glu", lambda q, k, m: torch.eye(n, dtype=q.dtype).expand(2, n, n), glu),
                                ("ones_is_unnormalised", lambda q, k, m: torch.ones(2, n, n, dtype=q.dtype), ones)):
            original = layer.attention
            layer.attention = a_fn  # type: ignore[method-assign,assignment]
            try:
                out[key] = rel(layer(x), want)
            finally:
                layer.attention = original  # type: ignore[method-assign]
        for causal in (False, True):
            flash = GAU(GAUConfig(d=d, e=2 * d, s=max(2, d // 2), chunk=max(1, cfg.prefix // 4), causal=causal)).double()
            out["flash_causal" if causal else "flash_global"] = rel(flash(x), flash_reference(flash, x, causal))
    return out


def padding(cfg: Config) -> dict[str, Any]:
    """Bidirectional GAU: largest relative change of the real tokens' outputs as padding (masked) is added."""
    torch.manual_seed(cfg.seed)
    d = cfg.leak_d
    layer = GAU(GAUConfig(d=d, e=2 * d, s=max(2, d // 2))).double()
    real = cfg.prefix
    x = torch.randn(1, max(cfg.lengths), d, dtype=torch.float64, generator=torch.Generator().manual_seed(cfg.seed + 1))
    with torch.no_grad():
        ref = layer(x[:, :real])
        worst = 0.0
        for length in cfg.lengths:
            mask = torch.zeros(1, length, dtype=torch.bool)
            mask[:, :real] = True
            out = layer(x[:, :length], key_mask=mask)[:, :real]
            worst = max(worst, float((out - ref).abs().max() / ref.abs().max()))
    return {"real": real, "max_padded": max(cfg.lengths), "worst_change": worst}


def run(cfg: Config, progress: bool = False) -> dict[str, Any]:
    """Counts, the length leak of each normaliser, and padding; plain data."""
    torch.manual_seed(cfg.seed)
    return {"device_type": "cpu", "counts": counts(cfg), "leak": leak(cfg), "padding": padding(cfg),
            "identities": identities(cfg)}


def claims(data: dict[str, Any], label: str) -> list[Claim]:
    """Counts against their closed forms, the source's parameter and cost statements, and the causal normaliser."""
    cnt, out = data["counts"], []
    for key in ("gau", "flash", "transformer"):
        row = cnt[key]
        out.append(Claim(f"count-{key}", f"{key}: forward FLOPs per token = closed form ($d = {cnt['d']}$, "
                         f"$n = {cnt['n']}$; FlopCounterMode on the module; parameters {row['parameters']:,} = "
                         f"{row['parameters_formula']:,}; {label})", "this book (analysis.theory.flash_counts)",
                         row["flops_formula"], row["flops_per_token"], 0.0, 0.0, "an exact count", unit="FLOPs/token",
                         approx_rel=0.0, alternative=float(causal_half(cnt, key)),
                         alternative_note="the count of a causal layer that skips the masked half of its n × n "
                                          "products (inside the chunks, for FLASH)"))
    widths = sorted(cnt["two_gau_over_transformer"], key=int)
    worst_w = max(widths, key=lambda w: cnt["two_gau_over_transformer"][w])
    out.append(Claim("two-gau-params", f"Two GAU layers ($e = 2d$, $s = 128$) have the parameters of one "
                     f"Transformer++ layer (ratio, worst over $d$ = {widths[0]} to {widths[-1]}: $d = {worst_w}$; "
                     f"{label})", SOURCE, 1.0, cnt["two_gau_over_transformer"][worst_w], 0.0, 0.0,
                     "an exact count: two GAU layers hold $12d^2 + 2ds$ weights against $12d^2$, so the ratio is 1 "
                     "only as $d \\to \\infty$", approx_rel=0.0, unit="ratio",
                     alternative=cnt["two_gau_over_transformer"][worst_w] / 2,
                     alternative_note="one GAU layer against one Transformer++ layer: half the ratio"))
    out.append(Claim("gau-quadratic-vs-mha", "GAU's quadratic part costs more than multi-head attention's "
                     "at equal parameters (two GAU layers per Transformer layer, $e = 2d$, $s = 128$, $d = 768$: "
                     f"$2 \\times 2n(s + e) / 4nd$; {label})", SOURCE + " (comments, May 30th)", 1.0,
                     2 * cnt["quadratic_ratio_per_layer"], 0.0, 0.0, "an exact count", kind="lower_bound",
                     approx_rel=0.0, unit="ratio", alternative=cnt["quadratic_ratio_per_layer"],
                     alternative_note="one GAU layer against one attention layer, $(s + e)/2d$: layer for layer, "
                                      "not at equal parameters"))
    lk, prefix, longest = data["leak"]["relative_change"], data["leak"]["prefix"], max(data["leak"]["lengths"])
    # a total-length normaliser rescales the prefix's rows: by prefix / n for 1/(ns), by (prefix / n)^2 for (qk/n)^2
    corrected = {"gau-printed": (1 - prefix / longest,
                                                           f"$1 - {prefix}/n$: every prefix row is rescaled by ${prefix}/n$"),
                 "gau-appendix": (1 - (prefix / longest) ** 2,
                                                    f"$1 - ({prefix}/n)^2$: the square takes the $1/n$ inside")}
    peer_gau = "peer-gau"
    if peer_gau in lk:
        corrected[peer_gau] = peer_gau_leak(lk[peer_gau], data["leak"]["lengths"], prefix)
    rivals = leak_rivals(lk, data["leak"]["lengths"], prefix, corrected)
    for variant, changes in lk.items():
        worst = max(changes)
        leaks = variant not in OURS
        fix, note = corrected.get(variant, (None, ""))
        rival, rival_note = rivals.get(variant, (None, ""))
        out.append(Claim(f"leak-{variant}", f"{shown(variant)}: appending tokens leaves the first "
                         f"{prefix} outputs unchanged (largest relative change up to $n = {longest}$, float64; {label})",
                         SOURCE if not leaks else SOURCE + " (as printed / as published)", 0.0, worst, 0.0,
                         1e3 * EPS64, "1000 float64 ulps", kind="upper_bound", unit="relative",
                         corrected=fix, corrected_note=note, alternative=rival, alternative_note=rival_note))
    statements = {
        "identity_is_glu": "$A = I$ turns GAU into the GLU feed-forward layer $(U \\odot V)\\, W_o$",
        "ones_is_unnormalised": "$A = \\mathbf{1}\\mathbf{1}^\\top$ turns GAU into uniform sum pooling gated by $U$, "
                                "$(U \\odot \\sum_j V_j)\\, W_o$: every position receives the same unweighted sum "
                                "of all values, which is not attention",
        "flash_global": "FLASH's chunked global term equals full linear attention $Q\\,(K^\\top V)/n$",
        "flash_causal": "FLASH's causal cumulative sum equals the explicit sum over earlier chunks",
    }
    rival_of = identity_rivals(data)
    for key, text in statements.items():
        out.append(Claim(f"{key.replace('_', '-')}", f"{text} (relative gap, float64; {label})", SOURCE, 0.0,
                         data["identities"][key], 0.0, 1e3 * EPS64, "1000 float64 ulps", kind="upper_bound",
                         unit="relative", **rival_of[key]))
    pad = data["padding"]
    out.append(Claim("padding", f"Real tokens' outputs do not change with the padded length ({pad['real']} "
                     f"real tokens, padded to {pad['max_padded']}, float64; {label})", "this book", 0.0,
                     pad["worst_change"], 0.0, 1e3 * EPS64, "1000 float64 ulps", kind="upper_bound", unit="relative",
                     alternative=1 - pad["real"] / pad["max_padded"],
                     alternative_note=f"a normaliser that counts the padding among the keys: every real row scaled "
                                      f"by {pad['real']}/{pad['max_padded']} (the layer has no biases at init)"))
    return out


def causal_half(cnt: dict[str, Any], key: str) -> float:
    """FLOPs per token of the layer if it computed only the causal half of its n x n (or c x c) products."""
    row = cnt[key]
    if key == "flash":  # only the quadratic part inside a chunk, 2c(s + e), has a masked half
        return row["flops_formula"] - cnt["chunk"] * (cnt["s"] + cnt["e"])
    return row["flops_formula"] - row["length_formula"] / 2


def leak_share(changes: list[float], lengths: list[int], prefix: int, power: int) -> tuple[float, int] | None:
    """D, the share of the rescaled term in the largest prefix output, read off the first extension to n0 > prefix
    of a normaliser that scales that term by (prefix / n)^power, with n0; None with no extension."""
    pairs = [(c, n) for c, n in zip(changes, lengths) if n > prefix]
    if not pairs:
        return None
    first, n0 = pairs[0]
    return first / (1 - (prefix / n0) ** power), n0


def leak_rivals(lk: dict[str, list[float]], lengths: list[int], prefix: int,
                corrected: dict[str, tuple[float | None, str]]) -> dict[str, tuple[float | None, str]]:
    """Per leak variant the value its rival predicts for the largest change: for a normaliser that counts every key
    seen, the leak the total-length normaliser it replaces measures; for a total-length normaliser, its rescaling."""
    longest = max(lengths)
    out: dict[str, tuple[float | None, str]] = {}
    printed_gau, printed_flash = "gau-printed", "flash-printed"
    peer_gau, peer_flash = "peer-gau", "peer-flash"
    for variant, (fix, _) in corrected.items():
        if fix is not None:
            out[variant] = (fix, "the prefix rows rescaled by the total-length normaliser (the corrected prediction)")
    if printed_flash in lk:
        share = leak_share(lk[printed_flash], lengths, prefix, 1)
        if share is not None:  # the printed FLASH rescales only its linear term, by prefix / n
            out[printed_flash] = (share[0] * (1 - prefix / longest),
                                  f"$D\\,(1 - {prefix}/n)$: only the linear term is rescaled, and it is the share "
                                  f"$D = {share[0]:.4g}$ of the output, read off the extension to $n = {share[1]}$")
    for ours, theirs in (("gau-ours", printed_gau),
                         ("flash-ours", printed_flash), (peer_flash, peer_gau)):
        if ours in lk and theirs in lk:
            out[ours] = (max(lk[theirs]), f"the change measured for {shown(theirs)}, which divides by the total length")
    return out


def identity_rivals(data: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The rival of each identity. The layers have no biases at init, so a rival that scales the attention output by
    r has the relative gap |1 - r| exactly; FLASH's chunked sums are told from the term they make up instead."""
    n = 4 * data["leak"]["prefix"]  # the identities' length (identities())
    lk = data["leak"]
    share = leak_share(lk["relative_change"].get("flash-printed", []), lk["lengths"],
                       lk["prefix"], 1)
    linear = {} if share is None else {"effect": share[0]}  # a wrong chunked sum changes the output by about D
    return {
        "identity_is_glu": {"alternative": 1 - 1 / n,
                            "alternative_note": f"$A = I/n$: the source's $1/n$ kept outside the kernel, the GLU "
                                                f"scaled by $1/{n}$"},
        "ones_is_unnormalised": {"alternative": 1 - 1 / n,
                                 "alternative_note": f"uniform attention normalised over the {n} keys, "
                                                     f"$A = \\mathbf{{1}}\\mathbf{{1}}^\\top/n$: mean pooling"},
        "flash_global": linear,
        "flash_causal": linear,
    }


def peer_gau_leak(changes: list[float], lengths: list[int], prefix: int) -> tuple[float | None, str]:
    """The corrected prediction of FLASH-pytorch's causal GAU leak at the longest length, and its note.

    The peer divides its scores by the total length before squaring, relu((qk + bias) / n)^2, so appending tokens
    scales the prefix's attention output by (prefix / n)^2: the change of its output is 1 - (prefix / n)^2 times the
    share D of the attention part in the largest output (the rest is the output projection's bias), the same D at
    every n. D is read off the shortest extension; the prediction is for the longest."""
    pairs = [(c, n) for c, n in zip(changes, lengths) if n > prefix]
    if len(pairs) < 2:
        return None, ""
    (first, n0), longest = pairs[0], max(n for _, n in pairs)
    share = first / (1 - (prefix / n0) ** 2)
    return (share * (1 - (prefix / longest) ** 2),
            f"$D\\,(1 - ({prefix}/n)^2)$: the peer divides its scores by $n$ before squaring, and its output bias "
            f"dilutes the change by $D = {share:.4g}$, read off the extension to $n = {n0}$")


def shown(variant: str) -> str:
    """The leak variant's name as the reader sees it, its maths in LaTeX."""
    return VARIANTS[variant]


def plan(cfg: Config) -> list[Workload]:
    """Counted work: one forward of each layer and the leak sweep (a few matrix products); no training."""
    counted = 3 * fc.gau_counts(cfg.d, 2 * cfg.d, cfg.s, cfg.count_length).flops * cfg.count_length
    leak_flops = 7 * sum(fc.gau_counts(cfg.leak_d, 2 * cfg.leak_d, max(2, cfg.leak_d // 2), n).flops * n
                         for n in cfg.lengths)
    # the largest tensors: the n x n attention matrices of the count and of the leak sweep, in float64
    memory = 8.0 * 4 * (cfg.count_length**2 + max(cfg.lengths) ** 2)
    return [Workload("layer counts and the length leak", flops=float(counted + leak_flops), memory_bytes=memory)]
