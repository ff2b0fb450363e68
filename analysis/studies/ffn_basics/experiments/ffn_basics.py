"""Feed-forward layers, activations and dropout, as the Transformer notes state them.

Measured: GELU, its tanh and sigmoid approximations, the notes' GELU (erf from 1) and Swish on a dense grid,
against torch; the GLU family against torch.nn.functional.glu; the parameters of the FFN and of SwiGLU in
torch modules; whether the first FFN matrix merges into SwiGLU's two (forward pass, and one training step);
and where dropout acts in torch.nn.Transformer, counted with hooks, against the original paper.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from analysis.core.experiment import Workload
from analysis.core.verify import Claim
from analysis.models.lm import FeedForward, ModelConfig
from analysis.theory import transformer_basics as tb

NAME = "ffn-basics"
DATA_VERSION = 1  # raised when the layout of the record's data changes
SOURCE = "DL——Transformer study notes"
EPS64 = float(np.finfo(np.float64).eps)
EPS32 = float(np.finfo(np.float32).eps)


@dataclass(frozen=True)
class Config:
    """Grid size and the sizes of the merge check."""

    grid: int
    d: int
    d_ff: int
    hidden: int
    tokens: int
    seed: int = 0


CONFIGS: dict[str, Config] = {
    "smoke": Config(grid=20_001, d=32, d_ff=128, hidden=64, tokens=64),
    "cpu": Config(grid=400_001, d=128, d_ff=512, hidden=256, tokens=512),
    "gpu": Config(grid=4_000_001, d=512, d_ff=2048, hidden=1024, tokens=4096),
}




def activations(cfg: Config) -> dict[str, Any]:
    """Errors of the GELU approximations and of the notes' GELU; torch against the closed forms."""
    x = np.linspace(-8.0, 8.0, cfg.grid)
    exact = tb.gelu(x)
    xt = torch.from_numpy(x)
    out: dict[str, Any] = {}
    for name, approx in (("tanh", tb.gelu_tanh(x)), ("sigmoid", tb.gelu_sigmoid(x)), ("notes", tb.notes_gelu(x))):
        err = approx - exact
        i = int(np.argmax(np.abs(err)))
        out[name] = {"max_abs": float(abs(err[i])), "at": float(x[i])}
    out["torch_gelu_gap"] = float((F.gelu(xt).numpy() - exact).__abs__().max())
    out["torch_gelu_tanh_gap"] = float((F.gelu(xt, approximate="tanh").numpy() - tb.gelu_tanh(x)).__abs__().max())
    out["torch_silu_gap"] = float((F.silu(xt).numpy() - tb.swish(x)).__abs__().max())
    out["notes_slope_at_8"] = float(tb.notes_gelu(np.array([8.0]))[0] / 8.0)
    sub = slice(None, None, max(1, cfg.grid // 2000))
    out["curve"] = {"x": x[sub].tolist(), "gelu": exact[sub].tolist(), "tanh": tb.gelu_tanh(x)[sub].tolist(),
                    "sigmoid": tb.gelu_sigmoid(x)[sub].tolist(), "notes": tb.notes_gelu(x)[sub].tolist(),
                    "swish": tb.swish(x)[sub].tolist(), "relu": np.maximum(x, 0)[sub].tolist()}
    return out


def glu_family(cfg: Config, gen: torch.Generator) -> dict[str, float]:
    """Max gap between :func:`tb.glu_ffn` and torch for each gate (F.glu for GLU, F.relu / F.gelu / F.silu)."""
    x = torch.randn(cfg.tokens, cfg.d, generator=gen, dtype=torch.float64)
    w, v = (torch.randn(cfg.d, cfg.hidden, generator=gen, dtype=torch.float64) / math.sqrt(cfg.d) for _ in range(2))
    w2 = torch.randn(cfg.hidden, cfg.d, generator=gen, dtype=torch.float64) / math.sqrt(cfg.hidden)
    torch_forms = {"glu": lambda: F.glu(torch.cat([x @ v, x @ w], -1), -1),
                   "bilinear": lambda: (x @ w) * (x @ v), "reglu": lambda: F.relu(x @ w) * (x @ v),
                   "geglu": lambda: F.gelu(x @ w) * (x @ v), "swiglu": lambda: F.silu(x @ w) * (x @ v)}
    gaps = {}
    for kind, form in torch_forms.items():
        ref = (form() @ w2).numpy()
        ours = tb.glu_ffn(x.numpy(), w.numpy(), v.numpy(), w2.numpy(), kind)
        gaps[kind] = float(np.abs(ours - ref).max() / np.abs(ref).max())
    return gaps


def parameter_counts(d: int = 512) -> dict[str, float]:
    """FFN parameters of torch.nn.TransformerEncoderLayer (d, 4d) and of the book's ReLU and SwiGLU FFNs."""
    layer = nn.TransformerEncoderLayer(d, 8, 4 * d)
    ffn_w = layer.linear1.weight.numel() + layer.linear2.weight.numel()
    ffn_b = layer.linear1.bias.numel() + layer.linear2.bias.numel()
    relu = FeedForward(ModelConfig(d=d, ffn="relu", block="transformer"))
    swiglu = FeedForward(ModelConfig(d=d, ffn="swiglu", block="transformer"))
    notes_r = round(2 * d / 3)
    return {"d": d, "torch_ffn_weights": ffn_w, "torch_ffn_with_bias": ffn_w + ffn_b,
            "book_relu": sum(p.numel() for p in relu.parameters()),
            "book_swiglu": sum(p.numel() for p in swiglu.parameters()),
            "book_swiglu_weights": sum(m.weight.numel() for m in swiglu.modules() if isinstance(m, nn.Linear)),
            "swiglu_hidden": swiglu.w1.out_features, "notes_hidden": notes_r,
            "notes_swiglu_weights": tb.glu_ffn_parameters(d, notes_r),
            "matching_hidden": ffn_w / (3 * d)}


def merge(cfg: Config, gen: torch.Generator) -> dict[str, float]:
    """(Swish(h W) * h V) W_2 with h = x W_1 against the merged (Swish(x W_1 W) * x W_1 V) W_2: forward gap, and the
    gap between the two function changes after one SGD step on the same loss (the reparametrisation trains differently)."""
    x = torch.randn(cfg.tokens, cfg.d, generator=gen, dtype=torch.float64)
    target = torch.randn(cfg.tokens, cfg.d, generator=gen, dtype=torch.float64)
    w1 = (torch.randn(cfg.d, cfg.d_ff, generator=gen, dtype=torch.float64) / math.sqrt(cfg.d)).requires_grad_()
    w = (torch.randn(cfg.d_ff, cfg.hidden, generator=gen, dtype=torch.float64) / math.sqrt(cfg.d_ff)).requires_grad_()
    v = (torch.randn(cfg.d_ff, cfg.hidden, generator=gen, dtype=torch.float64) / math.sqrt(cfg.d_ff)).requires_grad_()
    w2 = (torch.randn(cfg.hidden, cfg.d, generator=gen, dtype=torch.float64) / math.sqrt(cfg.hidden)).requires_grad_()
    mw = (w1 @ w).detach().requires_grad_()
    mv = (w1 @ v).detach().requires_grad_()
    mw2 = w2.detach().clone().requires_grad_()

    def factored() -> torch.Tensor:
        h = x @ w1
        return (F.silu(h @ w) * (h @ v)) @ w2

    def merged() -> torch.Tensor:
        return (F.silu(x @ mw) * (x @ mv)) @ mw2

    f0, g0 = factored(), merged()
    forward_gap = float((f0 - g0).detach().abs().max() / f0.detach().abs().max())
    lr = 0.1
    for params, out in (((w1, w, v, w2), f0), ((mw, mv, mw2), g0)):
        loss = ((out - target) ** 2).mean()
        grads = torch.autograd.grad(loss, params)
        with torch.no_grad():
            for p, g in zip(params, grads):
                p -= lr * g
    with torch.no_grad():
        df, dg = factored() - f0, merged() - g0
    return {"forward_gap": forward_gap, "step_gap": float((df - dg).norm() / dg.norm()),
            "params_factored": cfg.d * cfg.d_ff + 2 * cfg.d_ff * cfg.hidden + cfg.hidden * cfg.d,
            "params_merged": 3 * cfg.d * cfg.hidden}


def dropout_sites(layers: int = 6) -> dict[str, int]:
    """Dropout applications in one training-mode forward pass of torch.nn.Transformer (hooks on nn.Dropout, plus
    the attention-weight dropout inside each nn.MultiheadAttention), against the paper's placement."""
    model = nn.Transformer(d_model=64, nhead=4, num_encoder_layers=layers, num_decoder_layers=layers,
                           dim_feedforward=128, dropout=0.1, batch_first=True).train()
    calls = {"module": 0}

    def hook(*_: Any) -> None:
        calls["module"] += 1

    for m in model.modules():
        if isinstance(m, nn.Dropout):
            m.register_forward_hook(hook)
    attention = sum(1 for m in model.modules() if isinstance(m, nn.MultiheadAttention) and m.dropout > 0)
    src, tgt = torch.randn(2, 5, 64), torch.randn(2, 4, 64)
    model(src, tgt)
    # the paper (sec. 5.4): each sub-layer's output before the residual add and norm, and the two embedding sums
    paper = 2 * layers + 3 * layers + 2
    return {"torch_modules": calls["module"], "torch_attention": attention,
            "torch_total": calls["module"] + attention, "paper_residual": 5 * layers, "paper_total": paper}


def run(cfg: Config, progress: bool = False) -> dict[str, Any]:
    """Every measurement of the chapter; plain data."""
    gen = torch.Generator().manual_seed(cfg.seed)
    return {"device_type": "cpu", "activations": activations(cfg), "glu": glu_family(cfg, gen), "params": parameter_counts(),
            "merge": merge(cfg, gen), "dropout": dropout_sites(), "symbolic": tb.symbolic_checks()}


def merge_without_activation_gap(tokens: int = 64, d: int = 32, d_ff: int = 128, hidden: int = 64) -> float:
    """Relative forward gap of the merge when $W_1$ is followed by the FFN's ReLU, as in the FFN it replaces: the
    merged $x W_1 W$ then drops a nonlinearity (a small seeded instance; the merge claim's rival)."""
    gen = torch.Generator().manual_seed(0)
    x = torch.randn(tokens, d, generator=gen, dtype=torch.float64)
    w1 = torch.randn(d, d_ff, generator=gen, dtype=torch.float64) / math.sqrt(d)
    w, v = (torch.randn(d_ff, hidden, generator=gen, dtype=torch.float64) / math.sqrt(d_ff) for _ in range(2))
    w2 = torch.randn(hidden, d, generator=gen, dtype=torch.float64) / math.sqrt(hidden)
    h = F.relu(x @ w1)
    kept = (F.silu(h @ w) * (h @ v)) @ w2
    merged = (F.silu(x @ (w1 @ w)) * (x @ (w1 @ v))) @ w2
    return float((kept - merged).abs().max() / kept.abs().max())


def claims(data: dict[str, Any], label: str) -> list[Claim]:
    """The chapter's claims from one run."""
    act = data["activations"]
    curve = np.asarray(data["activations"]["curve"]["x"])
    out = [
        Claim("gelu-notes", f"$\\mathrm{{GELU}}(x) = x\\,(1 + \\mathrm{{erf}}(x/\\sqrt{{2}}))/2$ with the notes' "
              f"$\\mathrm{{erf}}(x) = \\frac{{2}}{{\\sqrt{{\\pi}}}} \\int_1^x e^{{-t^2}} dt$ "
              f"(max gap to GELU on $[-8, 8]$, at $x = {act['notes']['at']:.3g}$; {label})", SOURCE, 0.0,
              act["notes"]["max_abs"], 0.0, 1e3 * EPS64, "1000 float64 ulps", kind="upper_bound", unit="absolute",
              # erf from 1 is erf(x) - erf(1): the gap is x erf(1)/2, largest at |x| = 8
              alternative=4.0 * math.erf(1.0), alternative_note="the gap erf from 1 gives, $8\\,\\mathrm{erf}(1)/2$"),
        Claim("gelu-torch", f"GELU with erf from 0, $x\\,\\Phi(x)$, is what torch computes (max gap on $[-8, 8]$; {label})",
              "Hendrycks and Gimpel 2016", 0.0, act["torch_gelu_gap"], 0.0, 16 * EPS64 * 8,
              "16 float64 ulps of $|x| \\leq 8$", kind="upper_bound", unit="absolute",
              alternative=act["tanh"]["max_abs"], alternative_note="the tanh approximation's gap, what torch would "
              "show if it computed that"),
        Claim("swish-silu", f"$\\mathrm{{Swish}}_1(x) = x\\,\\sigma(x)$ is torch's SiLU ({label})", SOURCE, 0.0,
              act["torch_silu_gap"], 0.0, 16 * EPS64 * 8, "16 float64 ulps of $|x| \\leq 8$", kind="upper_bound",
              unit="absolute", alternative=float(np.abs(tb.swish(curve) - tb.gelu_sigmoid(curve)).max()),
              alternative_note="the gap of $x\\,\\sigma(1.702x)$, GELU's sigmoid form that SiLU is mistaken for"),
    ]
    glu = data["glu"]
    out.append(Claim("glu-family", f"The notes' GLU, bilinear, ReGLU, GEGLU and SwiGLU FFNs match torch "
                     f"(worst relative gap; {label})", SOURCE + "; Shazeer 2020", 0.0, max(glu.values()), 0.0,
                     1e3 * EPS64, "1000 float64 ulps", kind="upper_bound", unit="relative",
                     alternative=_glu_swapped_gap(),
                     alternative_note="the gap of GLU with its two halves swapped, the convention F.glu leaves open"))
    p = data["params"]
    out.append(Claim("ffn-8h2", f"The FFN of a $d = {p['d']}$ Transformer layer has $8H^2$ parameters "
                     f"(torch.nn.TransformerEncoderLayer, biases included; {label})", SOURCE, 8 * p["d"] ** 2,
                     p["torch_ffn_with_bias"], 0.0, 0.0, "an exact count", unit="parameters", approx_rel=0.0,
                     corrected=8 * p["d"] ** 2 + 5 * p["d"], corrected_note="$8H^2$ counts the weights; the biases add $5H$",
                     alternative=8 * p["d"] ** 2 + 5 * p["d"], alternative_note="the count with biases, $8H^2 + 5H$"))
    out.append(Claim("swiglu-width", f"SwiGLU matches the FFN's parameters at hidden width $r = 2d/3$ "
                     f"($d = {p['d']}$; the width that equalises the counted weights; {label})", SOURCE, 2 * p["d"] / 3,
                     p["matching_hidden"], 0.0, 1.0, "one unit of width ($r$ is an integer)", unit="width", approx_rel=0.0,
                     corrected=8 * p["d"] / 3, corrected_note="$r = 2 d_{\\mathrm{ff}} / 3 = 8d/3$: the notes take $W_1$ as $d \\times d$, "
                     "but the FFN's is $d \\times 4d$",
                     alternative=8 * p["d"] / 3, alternative_note="$8d/3$, the width with the FFN's $d \\times 4d$ $W_1$"))
    m = data["merge"]
    out.append(Claim("swiglu-merge", f"$W_1$ merges into SwiGLU's $W$ and $V$: the same function with $3dr$ instead of "
                     f"$d\\, d_{{\\mathrm{{ff}}}} + 2 d_{{\\mathrm{{ff}}}} r + r d$ weights (relative forward gap; {label})", SOURCE, 0.0, m["forward_gap"], 0.0,
                     1e3 * EPS64, "1000 float64 ulps", kind="upper_bound", unit="relative",
                     alternative=merge_without_activation_gap(),
                     alternative_note="the gap when $W_1$ keeps the FFN's ReLU, which the merge would drop"))
    out.append(Claim("swiglu-merge-training", f"... and training the merged matrices is training the "
                     f"factored ones (relative gap between the function changes after one SGD step; {label})", SOURCE,
                     0.0, m["step_gap"], 0.0, 1e3 * EPS64, "1000 float64 ulps", kind="upper_bound", unit="relative",
                     # a reparametrisation that trains differently moves the function by a change of its own size
                     effect=1.0))
    dr = data["dropout"]
    out.append(Claim("dropout-sites", f"torch.nn.Transformer applies dropout where the paper and the notes put it, "
                     f"once on each sub-layer output ({dr['paper_residual']} sites for 6 + 6 layers; dropout sites "
                     f"counted with hooks in one training-mode forward pass of torch.nn.Transformer; {label})",
                     "PyTorch's torch.nn.Transformer against Vaswani et al. 2017, sec. 5.4 (the placement the notes "
                     "restate)", dr["paper_residual"], dr["torch_total"], 0.0, 0.0,
                     "an exact count (torch.nn.Transformer has no embedding layer, so the paper's 2 embedding sites are "
                     "left out)", unit="sites", approx_rel=0.0, corrected=10 * (dr["paper_residual"] // 5),
                     corrected_note="10 per encoder-decoder layer pair: PyTorch also drops the attention weights "
                                    "(3 per pair) and the FFN's hidden activations (2 per pair)",
                     alternative=10 * (dr["paper_residual"] // 5),
                     alternative_note="PyTorch's placement, which also drops attention weights and FFN activations"))
    return out


def _glu_swapped_gap(tokens: int = 64, d: int = 32, hidden: int = 64) -> float:
    """Relative gap between GLU gated on $xV$ and GLU gated on $xW$ (a small seeded instance): what mixing up F.glu's
    halves gives, the glu-family claim's rival."""
    gen = torch.Generator().manual_seed(0)
    x = torch.randn(tokens, d, generator=gen, dtype=torch.float64)
    w, v = (torch.randn(d, hidden, generator=gen, dtype=torch.float64) / math.sqrt(d) for _ in range(2))
    w2 = torch.randn(hidden, d, generator=gen, dtype=torch.float64) / math.sqrt(hidden)
    ref = (F.glu(torch.cat([x @ v, x @ w], -1), -1) @ w2)
    swapped = (F.glu(torch.cat([x @ w, x @ v], -1), -1) @ w2)
    return float((ref - swapped).abs().max() / ref.abs().max())


def plan(cfg: Config) -> list[Workload]:
    """Activations on the grid (~50 FLOPs a point each) and the FFN merge check on ``tokens`` tokens (counted)."""
    ffn = 2.0 * cfg.tokens * cfg.d * cfg.hidden * 3 * 3  # forward, backward, and the merged copy
    return [Workload("activations and FFN checks", flops=50.0 * 12 * cfg.grid + ffn,
                     memory_bytes=8.0 * max(cfg.grid * 4, cfg.tokens * cfg.hidden * 3))]
