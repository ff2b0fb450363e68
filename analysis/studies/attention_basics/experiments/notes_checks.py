"""Four statements of the Transformer notes checked against torch: cross-attention's inputs, the -1e9 mask in low
precision, "no official RMSNorm in PyTorch", and tied embeddings multiplied by sqrt(d_model).

* Cross-attention: the notes say "CrossMHA's Q and K are the encoder's output, V comes from the decoder"
  (CrossMHA的Q,K是Encoder的输出,V来自Decoder). Attention returns one row per query, so the output's length tells
  where Q comes from; and a key/value pair must come from one sequence, since a value is looked up by its own key.
  Measured on ``torch.nn.TransformerDecoderLayer`` (the paper's layout): which inputs the cross-attention receives
  from the encoder, and the length of its output with encoder and decoder of different lengths.
* Masking: the notes replace masked scores by "a big negative number, such as -1e9" (一个大负数,比如-1e9).
  In float16, whose largest finite value is 65504, -1e9 is -inf; a row with every key masked (padding, or a
  query before any allowed key) then has softmax 0/0 = NaN. Measured: masked_fill with -1e9 and softmax, in
  float32, bfloat16 and float16, on a partly and a fully masked row. In float16 torch refuses ``masked_fill`` with
  -1e9 outright, and an additive mask turns every weight of the row to NaN (0 * -inf), not only the masked ones.
* RMSNorm: the notes say "as of 2024 PyTorch has no official RMSNorm" (截止到24年,PyTorch 官方还没有提供标准的
  RMSNorm 实现). ``torch.nn.RMSNorm`` was added in torch 2.4 (July 2024). Measured: whether this torch has it,
  and its largest gap to x / sqrt(mean(x^2) + eps) * g.
* Tied embeddings: the notes say tying the output layer to the embedding (W_out = W_embed^T) "saves storage"
  (节约存储), and quote the paper's "in the embedding layers, we multiply those weights by sqrt(d_model)" without a
  reason. Counted: the parameters tying saves. Sampled, at several widths d: one matrix drawn at the output layer's
  scale N(0, 1/d) gives logits of unit variance from a unit-RMS hidden state, and times sqrt(d) token embeddings of
  unit mean square, twice the sinusoidal positions' 1/2 at every d; without the factor their ratio falls as 1/d.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from analysis.core.experiment import Workload
from analysis.core.stats import Estimate, from_se, mean_estimate
from analysis.core.verify import Claim, estimate_fields
from analysis.theory.transformer_basics import sinusoidal_pe

NAME = "notes-checks"
DATA_VERSION = 1
SOURCE = "DL——Transformer study notes"
PAPER = "Vaswani et al. 2017, sec. 3.4 (quoted by the notes)"
BOOK = "this book (why the paper scales the embedding)"
DTYPES = ("float32", "bfloat16", "float16")


@dataclass(frozen=True)
class Config:
    """Sizes of the cross-attention layer and of the RMSNorm check (all computed, no training)."""

    d: int
    heads: int
    tgt_len: int
    src_len: int
    norm_rows: int
    vocab: int  # rows of the tied matrix: the independent units of the sampled mean squares
    widths: tuple[int, ...]  # model widths d of the tied-embedding check (even: sin/cos pairs)
    hidden: int  # unit-RMS hidden states whose logits are sampled
    seed: int = 0

    def __post_init__(self) -> None:
        if self.tgt_len == self.src_len:
            raise ValueError("tgt_len and src_len must differ, or the output length cannot tell Q's origin")
        if not self.widths or any(d < 2 or d % 2 for d in self.widths):
            raise ValueError(f"widths must be even numbers >= 2; got {self.widths!r}")
        if self.vocab < 2 or self.hidden < 1:
            raise ValueError(f"vocab must be >= 2 and hidden >= 1; got {self.vocab!r}, {self.hidden!r}")


CONFIGS: dict[str, Config] = {
    "smoke": Config(d=16, heads=2, tgt_len=3, src_len=5, norm_rows=8, vocab=64, widths=(16, 32), hidden=8),
    # cpu: 8192 rows put the SE of a mean square of d = 64 entries at sqrt(2 / (64 * 8192)) = 0.2%
    "cpu": Config(d=64, heads=4, tgt_len=5, src_len=11, norm_rows=256, vocab=8192, widths=(64, 128, 256, 512, 1024),
                  hidden=256),
    "gpu": Config(d=64, heads=4, tgt_len=5, src_len=11, norm_rows=256, vocab=32768,
                  widths=(64, 128, 256, 512, 1024, 2048), hidden=256),
}


def cross_attention_inputs(cfg: Config, gen: torch.Generator) -> dict[str, Any]:
    """Which of query, key and value the decoder layer's cross-attention takes from the encoder (memory), found by
    identity of the tensors it receives, and the length of its output."""
    layer = torch.nn.TransformerDecoderLayer(cfg.d, cfg.heads, dim_feedforward=2 * cfg.d, dropout=0.0,
                                             batch_first=True).eval()
    tgt = torch.randn(1, cfg.tgt_len, cfg.d, generator=gen)
    memory = torch.randn(1, cfg.src_len, cfg.d, generator=gen)
    seen: dict[str, Any] = {}

    def hook(module: torch.nn.Module, args: tuple[Any, ...], kwargs: dict[str, Any], out: Any) -> None:
        q, k, v = (kwargs.get(n, a) for n, a in zip(("query", "key", "value"), (*args, None, None, None)))
        seen.update(query=q, key=k, value=v, out_len=int(out[0].shape[1]))

    handle = layer.multihead_attn.register_forward_hook(hook, with_kwargs=True)
    with torch.no_grad():
        layer(tgt, memory)
    handle.remove()
    from_encoder = {name: bool(seen[name] is memory) for name in ("query", "key", "value")}
    return {"from_encoder": from_encoder, "out_len": seen["out_len"], "tgt_len": cfg.tgt_len,
            "src_len": cfg.src_len}


def masked_rows() -> dict[str, dict[str, Any]]:
    """Per dtype, the two ways code applies the notes' -1e9: ``masked_fill(mask, -1e9)`` (whether torch accepts the
    value at all) and an additive mask ``scores + mask * -1e9`` in that dtype; then softmax: the value stored, NaN
    weights (in float16 -1e9 is -inf and 0 * -inf = NaN poisons unmasked scores too), and the weight a partly
    masked row puts on masked keys; and the NaN weights with the dtype's own lowest value, finfo(dtype).min."""
    out: dict[str, dict[str, Any]] = {}
    scores = torch.tensor([[0.5, -1.0, 2.0, 0.0], [0.5, -1.0, 2.0, 0.0]])
    mask = torch.tensor([[False, True, False, True], [True, True, True, True]])  # row 2: every key masked
    for name in DTYPES:
        dtype = getattr(torch, name)
        try:
            scores.to(dtype).masked_fill(mask, -1e9)
            fill_error = ""
        except RuntimeError as err:  # float16: "value cannot be converted to type c10::Half without overflow"
            fill_error = str(err).splitlines()[0]
        filled = scores.to(dtype) + mask.to(dtype) * torch.tensor(-1e9).to(dtype)
        p = torch.softmax(filled, dim=-1).float()
        safe = torch.softmax(scores.to(dtype).masked_fill(mask, torch.finfo(dtype).min), dim=-1).float()
        out[name] = {"finfo_min_nan_weights": int(torch.isnan(safe).sum()),"masked_fill_error": fill_error, "stored": float(torch.tensor(-1e9).to(dtype)),
                     "nan_weights": int(torch.isnan(p).sum()), "weights": int(p.numel()),
                     "fully_masked_nan": int(torch.isnan(p[1]).sum()),
                     "partly_masked_leak": float(p[0][mask[0]].sum()), "finite_max": float(torch.finfo(dtype).max)}
    return out


def rmsnorm(cfg: Config, gen: torch.Generator) -> dict[str, Any]:
    """Whether torch has nn.RMSNorm, the torch version, and its largest gap (float64) to the formula."""
    has = hasattr(torch.nn, "RMSNorm")
    gap = math.nan
    if has:
        eps = 1e-6
        x = torch.randn(cfg.norm_rows, cfg.d, generator=gen, dtype=torch.float64) * 3.0
        norm = torch.nn.RMSNorm(cfg.d, eps=eps, dtype=torch.float64)
        with torch.no_grad():
            norm.weight.copy_(torch.rand(cfg.d, generator=gen, dtype=torch.float64) + 0.5)
            ref = x / torch.sqrt(x.pow(2).mean(-1, keepdim=True) + eps) * norm.weight
            gap = float((norm(x) - ref).abs().max() / ref.abs().max())
    return {"has_rmsnorm": has, "torch": torch.__version__, "relative_gap": gap}


def tied_parameters(vocab: int, d: int) -> dict[str, int]:
    """Parameters of an embedding plus a bias-free output layer, untied and tied (W_out = W_embed^T), as torch counts
    them: ``Module.parameters()`` yields a shared tensor once. Built on the meta device."""
    with torch.device("meta"):
        model = torch.nn.ModuleDict({"embed": torch.nn.Embedding(vocab, d), "out": torch.nn.Linear(d, vocab, bias=False)})
        untied = sum(p.numel() for p in model.parameters())
        model["out"].weight = model["embed"].weight
        tied = sum(p.numel() for p in model.parameters())
    return {"untied": untied, "tied": tied}


def tied_scales(cfg: Config, gen: torch.Generator) -> list[dict[str, Any]]:
    """Per width d: the shared matrix E ~ N(0, 1/d) (vocab x d, float64); the mean square of the token embeddings
    sqrt(d) E and its SE over the vocab rows; the sinusoidal positions' mean square over positions 0..vocab-1;
    and the mean square of the logits h E^T of ``hidden`` unit-RMS states h, with its SE over the vocab rows (given
    the states, the rows are independent)."""
    out = []
    for d in cfg.widths:
        e = torch.randn(cfg.vocab, d, generator=gen, dtype=torch.float64) / math.sqrt(d)
        token = (e * math.sqrt(d)).pow(2).mean(dim=1)  # one mean square per vocab row
        h = torch.randn(cfg.hidden, d, generator=gen, dtype=torch.float64)
        h = h / h.pow(2).mean(dim=1, keepdim=True).sqrt()  # RMS 1, as after a final RMSNorm or LayerNorm
        logits = (h @ e.T).pow(2).mean(dim=0)  # one mean square per vocab row
        pe = sinusoidal_pe(np.arange(cfg.vocab), d)
        t, lg = mean_estimate(token.tolist(), "rows"), mean_estimate(logits.tolist(), "rows")
        out.append({"d": d, "token_ms": t.value, "token_ms_se": t.se, "logit_ms": lg.value, "logit_ms_se": lg.se,
                    "pe_ms": float(np.mean(pe ** 2)), "rows": cfg.vocab})
    return out


def run(cfg: Config, progress: bool = False) -> dict[str, Any]:
    """Every check; plain data."""
    gen = torch.Generator().manual_seed(cfg.seed)
    return {"device_type": "cpu", "cross": cross_attention_inputs(cfg, gen), "masking": masked_rows(),
            "rmsnorm": rmsnorm(cfg, gen),
            "tied": {"parameters": tied_parameters(cfg.vocab, cfg.widths[-1]), "vocab": cfg.vocab,
                     "d": cfg.widths[-1], "scales": tied_scales(cfg, gen)}}


def plan(cfg: Config) -> list[Workload]:
    """One decoder layer's forward and a few small tensors: counted FLOPs."""
    n = cfg.tgt_len + cfg.src_len
    tied = sum(2.0 * cfg.hidden * cfg.vocab * d + 40.0 * cfg.vocab * d for d in cfg.widths)
    return [Workload("cross-attention, masking, RMSNorm and tied-embedding checks",
                     flops=24.0 * n * cfg.d * cfg.d + 10.0 * cfg.norm_rows * cfg.d + tied,
                     memory_bytes=8.0 * n * cfg.d * 8 + 8.0 * 3 * cfg.vocab * max(cfg.widths))]


EPS64 = float(torch.finfo(torch.float64).eps)


MASK_ROW = (0.5, -1.0, 2.0, 0.0)  # the partly masked row's scores in masked_rows(), its keys 1 and 3 masked
MASK_KEYS = (1, 3)
RMS_EPS, RMS_X_SCALE = 1e-6, 3.0  # the eps and the input scale (x = 3 N(0, 1)) of rmsnorm()'s check


def unmasked_share() -> float:
    """The weight softmax puts on the masked keys of the partly masked row when no mask is applied."""
    e = [math.exp(x) for x in MASK_ROW]
    return sum(e[i] for i in MASK_KEYS) / sum(e)


def has_rmsnorm_by_version(version: str) -> float:
    """1 when a torch of this version has torch.nn.RMSNorm (2.4 and later), else 0."""
    major, minor = (int(x) for x in version.split("+")[0].split(".")[:2])
    return float((major, minor) >= (2, 4))


def claims(data: dict[str, Any], label: str) -> list[Claim]:
    """Q from the encoder (the notes) against the layer; -1e9 masks in every precision; no RMSNorm in PyTorch."""
    cross, rms = data["cross"], data["rmsnorm"]
    torch_src = "torch.nn.TransformerDecoderLayer, after Vaswani et al. 2017"
    out = [
        Claim("cross-q-from-encoder",
              f"Cross-attention takes its queries from the encoder (1 = yes): the layer's output has "
              f"{cross['out_len']} rows, the decoder's length {cross['tgt_len']}, not the encoder's "
              f"{cross['src_len']} ({label})", SOURCE, predicted=1.0,
              measured=float(cross["from_encoder"]["query"]), uncertainty=0.0, tolerance=0.0,
              tolerance_basis="exact: which tensor the attention receives", corrected=0.0,
              corrected_note="queries come from the decoder; keys and values from the encoder", alternative=0.0,
              alternative_note="queries from the decoder, the other input the layer has"),
        Claim("cross-kv-from-encoder",
              f"Keys and values both come from the encoder (their count among K, V: {torch_src}; {label})",
              torch_src, predicted=2.0,
              measured=float(cross["from_encoder"]["key"] + cross["from_encoder"]["value"]), uncertainty=0.0,
              tolerance=0.0, tolerance_basis="exact: which tensor the attention receives", alternative=1.0,
              alternative_note="the notes' reading: keys from the encoder, values from the decoder"),
    ]
    for name in DTYPES:
        m = data["masking"][name]
        fill = "refuses" if m["masked_fill_error"] else "accepts"
        out.append(Claim(f"mask-1e9-{name}",
                         f"The notes' −1e9 mask gives finite attention weights in {name} (measured: how many of the "
                         f"{m['weights']} weights of a partly and a fully masked row are NaN, additive mask; −1e9 is "
                         f"stored as {float(m['stored']):.4g}, the largest finite value being {float(m['finite_max']):.4g}; "
                         f"masked_fill {fill} the value; {label})",
                         SOURCE, predicted=0.0, measured=float(m["nan_weights"]), uncertainty=0.0,
                         tolerance=0.0, tolerance_basis="exact: a count of NaN weights", kind="upper_bound",
                         unit="NaN weights", alternative=float(m["weights"]),
                         alternative_note="−1e9 overflowing to −inf: 0 · (−inf) = NaN spreads over every row with a "
                                          "masked key, here all the weights"))
    finite = [n for n in DTYPES if math.isfinite(float(data["masking"][n]["partly_masked_leak"]))]
    out.append(Claim("mask-1e9-partial",
                     f"Where the weights are finite ({', '.join(finite)}), −1e9 puts no weight on masked keys "
                     f"(largest masked weight of a partly masked row; {label})", SOURCE, predicted=0.0,
                     measured=max(float(data["masking"][n]["partly_masked_leak"]) for n in finite), uncertainty=0.0,
                     tolerance=0.0, tolerance_basis="exact: exp(−1e9) underflows to 0", kind="upper_bound",
                     unit="probability", alternative=unmasked_share(),
                     alternative_note="no mask: the softmax weight of the masked keys of the row's scores"))
    out.append(Claim("mask-finfo-min",
                     f"Filling with the dtype's lowest value, torch.finfo(dtype).min, gives finite weights in every "
                     f"precision, a fully masked row included (NaN weights, summed over {', '.join(DTYPES)}; {label})",
                     "PyTorch documentation (torch.finfo)", predicted=0.0,
                     measured=float(sum(data["masking"][n]["finfo_min_nan_weights"] for n in DTYPES)),
                     uncertainty=0.0, tolerance=0.0, tolerance_basis="exact: a count of NaN weights",
                     kind="upper_bound", unit="NaN weights",
                     alternative=float(sum(data["masking"][n]["nan_weights"] for n in DTYPES)),
                     alternative_note="the notes' −1e9 in the same rows, NaN weights summed over the dtypes"))
    out.append(Claim("no-torch-rmsnorm",
                     f"PyTorch has no official RMSNorm, 'as of 2024' (1 = it has one; torch {rms['torch']}; {label})",
                     SOURCE,
                     predicted=0.0, measured=float(rms["has_rmsnorm"]), uncertainty=0.0, tolerance=0.0,
                     tolerance_basis="exact: whether torch.nn.RMSNorm exists (added in torch 2.4, July 2024)",
                     corrected=1.0, corrected_note="torch.nn.RMSNorm exists since torch 2.4 (July 2024): the "
                                                   "statement held only before that release",
                     alternative=has_rmsnorm_by_version(rms["torch"]),
                     alternative_note=f"what torch's release notes give for torch {rms['torch']} (RMSNorm from 2.4)"))
    if rms["has_rmsnorm"]:
        out.append(Claim("torch-rmsnorm-formula",
                         f"torch.nn.RMSNorm computes $x/\\sqrt{{\\overline{{x^2}} + \\epsilon}}\\,g$ (largest gap "
                         f"relative to the largest output, float64; {label})", "PyTorch documentation",
                         predicted=0.0, measured=rms["relative_gap"], uncertainty=0.0, tolerance=16 * EPS64,
                         tolerance_basis="16 float64 ulps: a mean of squares, a square root and two products",
                         kind="upper_bound", unit="relative", alternative=RMS_EPS / (2 * RMS_X_SCALE**2),
                         alternative_note="the formula without $\\epsilon$, off by about "
                                          "$\\epsilon / (2\\,\\overline{x^2})$ with $\\overline{x^2} \\approx 9$"))
    if "tied" in data:
        out += tied_claims(data["tied"], label)
    return out


def tied_estimate(width: dict[str, Any], what: str) -> Estimate:
    """The sampled mean square ``what`` ('token' or 'logit') at one width, with its SE over the vocab rows."""
    return from_se(width[f"{what}_ms"], width[f"{what}_ms_se"], width["rows"], "vocab rows")


def tied_claims(tied: dict[str, Any], label: str) -> list[Claim]:
    """Tying saves V d parameters; times sqrt(d), a matrix at the output's N(0, 1/d) gives token embeddings of mean
    square 1 beside the positions' 1/2; unscaled, it gives unit-RMS states logits of variance 1 (widest d)."""
    par, top = tied["parameters"], tied["scales"][-1]
    widths = ", ".join(f"{w['d']:,}" for w in tied["scales"])
    return [
        Claim("tie-saves", f"Tying the output layer to the embedding ($W_{{out}} = W_{{embed}}^\\top$) saves storage: "
              f"vocabulary times width parameters (V = {tied['vocab']:,}, d = {tied['d']:,}, as torch counts them; "
              f"{label})", SOURCE, predicted=float(tied["vocab"] * tied["d"]),
              measured=float(par["untied"] - par["tied"]), uncertainty=0.0, tolerance=0.0,
              tolerance_basis="exact: a count of parameters", unit="parameters", alternative=0.0,
              alternative_note="no saving, as a count that lists the shared tensor under both names (state_dict) "
                               "gives"),
        Claim("tie-sqrt-d", f"Multiplying the shared weights by $\\sqrt{{d_{{model}}}}$ in the embedding gives "
              f"tokens a size that does not depend on the width: with the matrix at the output layer's scale "
              f"$N(0, 1/d)$ the token embeddings' mean square is 1, twice the sinusoidal positions' 1/2 (sampled at "
              f"d = {top['d']:,}; d = {widths} in the chapter's table; {label})", PAPER, predicted=1.0,
              **estimate_fields(tied_estimate(top, "token"), "the token embeddings' mean square"),
              unit="mean square", alternative=1 / top["d"], alternative_note="without the $\\sqrt{d}$: $1/d$"),
        Claim("tie-logit-scale", f"... and the same matrix, unscaled at the output, gives logits of variance 1 "
              f"from a hidden state of RMS 1, so one matrix serves both ends only with the factor (sampled at "
              f"d = {top['d']:,}; {label})", BOOK, predicted=1.0,
              **estimate_fields(tied_estimate(top, "logit"), "the logits' mean square"), unit="mean square",
              alternative=float(top["d"]), alternative_note="the matrix times $\\sqrt{d}$ at the output too: $d$"),
    ]
