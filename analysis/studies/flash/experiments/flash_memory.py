"""The source's memory formulas, measured on the tensors autograd saves for the backward pass (kexue.fm/archives/8934).

The source: multi-head attention "produces a matrix of size b h n^2" where GAU's single head needs b n^2; FLASH's
causal linear term, kept parallel by chunks, "needs only b (n/c) s e of space, whereas linear attention without
chunks needs b n s^2 (b h n s^2 with heads); with the current settings e/c << s, so it saves memory".

Measured exactly, on the meta device (shapes and dtypes without memory), at the FLASH paper's base sizes: every
tensor saved for backward in one forward pass (``saved_tensors_hooks``), grouped by shape, for
* causal multi-head softmax attention written out (its n x n matrices saved), and GAU's dense and lean paths;
* this book's causal FLASH layer at several chunk sizes c: its per-chunk summaries K_g^T V_g, (s x e) each;
* causal linear attention without chunks, as a prefix sum of the outer products k_t v_t^T (the parallel form the
  source compares with), once with GAU's values (width e) and once with values of the key width s.

And the source's batch claim at its own size ("at base size and length 1024, FLASH-Quad's largest batch is nearly
twice the Transformer's"): the bytes a sequence of its own saves for backward (flash-bench's ``sequence_bytes``,
counted on the CPU in float32 at batches 1 and 2) in two GAU layers (e = 2d, dense and lean) against one
Transformer++ layer of h heads, with its fused attention and with its attention written out; the same layers at
every depth, so the ratio is the stacks' batch ratio up to the embeddings and logits both share.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch

from analysis.core.experiment import Workload
from analysis.core.verify import Claim
from analysis.models.gau import GAU, GAUConfig
from analysis.models.saved import saved_shapes
from analysis.studies.flash.experiments import flash_bench as fb

NAME = "flash-memory"
DATA_VERSION = 3  # 2: the batch census at base size (the bytes a sequence of its own saves, per stack); 3: the census
# keyed by flash-bench's implementation ids, not their labels
SOURCE = "Su 2022, kexue.fm/archives/8934"


@dataclass(frozen=True)
class Config:
    """Batch, widths, length, chunk sizes and heads of the measured layers (the FLASH paper's base: 768, 1536, 128)."""

    batch: int
    d: int
    e: int
    s: int
    n: int
    chunks: tuple[int, ...]
    heads: int
    seed: int = 0

    def __post_init__(self) -> None:
        if any(self.n % c for c in self.chunks):
            raise ValueError(f"every chunk must divide n = {self.n}; got {self.chunks}")


CONFIGS: dict[str, Config] = {
    "smoke": Config(batch=2, d=32, e=40, s=16, n=96, chunks=(8, 24), heads=2),  # sizes all differ: a shape names a tensor
    "cpu": Config(batch=2, d=768, e=1536, s=128, n=1024, chunks=(64, 128, 256), heads=12),
    "gpu": Config(batch=2, d=768, e=1536, s=128, n=4096, chunks=(64, 128, 256, 512), heads=12),
}


def prefix_linear_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    """Causal linear attention without chunks, in parallel: O_t = q_t (sum_{j<=t} k_j v_j^T) / t, the prefix sums of
    the outer products kept for every position (b, n, s, e)."""
    states = (k[..., :, None] * v[..., None, :]).cumsum(dim=1)  # (b, n, s, e)
    t = torch.arange(1, q.shape[1] + 1, dtype=q.dtype, device=q.device)
    return (q[:, :, None, :] @ states).squeeze(2) / t[None, :, None]


def explicit_attention(qkv: torch.Tensor, heads: int) -> torch.Tensor:
    """Causal multi-head softmax attention written out (Vaswani et al. 2017): softmax(Q K^T / sqrt(d_h) + M) V per
    head, from the concatenated projections (b, n, 3 d); the n x n matrices are formed and saved."""
    b, n, three_d = qkv.shape
    q, k, v = (t.reshape(b, n, heads, three_d // (3 * heads)).transpose(1, 2) for t in qkv.chunk(3, dim=-1))
    scores = q @ k.transpose(-1, -2) / q.shape[-1] ** 0.5
    mask = torch.ones(n, n, dtype=torch.bool, device=qkv.device).tril()
    return (scores.masked_fill(~mask, float("-inf")).softmax(-1) @ v).transpose(1, 2).reshape(b, n, -1)


def _largest(shapes: list[tuple[int, ...]], tail: tuple[int, ...]) -> dict[str, Any]:
    """Among saved tensors whose last dimensions are ``tail``: how many, and the largest one's shape and elements."""
    match = [s for s in shapes if len(s) >= len(tail) and s[-len(tail):] == tail]
    if not match:
        return {"count": 0, "largest": None, "elements": 0}
    big = max(match, key=lambda s: torch.Size(s).numel())
    return {"count": len(match), "largest": list(big), "elements": int(torch.Size(big).numel())}


def run(cfg: Config, progress: bool = False) -> dict[str, Any]:
    """Saved-tensor census of each layer's forward on the meta device; plain data."""
    b, d, e, s, n = cfg.batch, cfg.d, cfg.e, cfg.s, cfg.n
    out: dict[str, Any] = {"sizes": {"batch": b, "d": d, "e": e, "s": s, "n": n, "heads": cfg.heads}}
    with torch.device("meta"):
        x = torch.empty(b, n, d, requires_grad=True)
        qkv = torch.nn.Linear(d, 3 * d)
        out["mha"] = _largest(saved_shapes(lambda: explicit_attention(qkv(x), cfg.heads)), (n, n))
        for backend in ("dense", "lean"):
            gau = GAU(GAUConfig(d=d, e=e, s=s, causal=True, backend=backend))
            out[f"gau_{backend}"] = _largest(saved_shapes(lambda: gau(x)), (n, n))
        out["flash"] = {}
        for c in cfg.chunks:
            flash = GAU(GAUConfig(d=d, e=e, s=s, causal=True, chunk=c))
            out["flash"][str(c)] = _largest(saved_shapes(lambda: flash(x)), (s, e))
        q, k = torch.empty(b, n, s, requires_grad=True), torch.empty(b, n, s, requires_grad=True)
        for name, width in (("prefix_e", e), ("prefix_s", s)):
            v = torch.empty(b, n, width, requires_grad=True)
            out[name] = _largest(saved_shapes(lambda: prefix_linear_attention(q, k, v)), (s, width))
    out["batch"] = batch_census(cfg)
    return out


BATCH_STACKS = ("flash-quad", "flash-quad-lean", "transformer")  # flash-bench's ids
UNFUSED = "transformer-unfused"  # the Transformer++ with its attention written out
BATCH_LENGTH = 1024  # the source's: "at base size and length 1024" (shorter configs count at their own n)


def batch_census(cfg: Config) -> dict[str, float]:
    """The bytes one sequence of min(n, 1024) tokens saves for backward (flash-bench's ``sequence_bytes``: B(2) - B(1), float32
    on the CPU) in two of flash-bench's GAU layers (e = 2d, whatever the config's e; dense and lean) and in one of its
    Transformer++ layers (heads of 64), fused and with its attention written out (the n x n softmax saved): equal
    parameters up to 2ds."""
    n = min(cfg.n, BATCH_LENGTH)
    bench = fb.Config(d=cfg.d, layers=1, s=cfg.s, chunk=min(cfg.chunks), tokens=n, lengths=(n,),
                      layer_lengths=(n,), repeats=1, warmup=0, threads=torch.get_num_threads(),
                      memory_budget_gb=64.0, time_budget_s=60.0, isolate=False, seed=cfg.seed)
    x = torch.randn(1, n, cfg.d, generator=torch.Generator().manual_seed(cfg.seed))
    out: dict[str, float] = {"n": float(n)}
    for name in BATCH_STACKS:
        torch.manual_seed(cfg.seed)
        out[name] = float(fb.sequence_bytes(fb.build(name, bench), x)[0])
    out[UNFUSED] = fb.unfused_transformer_saved_bytes(bench, n)
    return out


def plan(cfg: Config) -> list[Workload]:
    """Shapes on the meta device, then the batch census's forwards at batches 1 and 2 (about 1.4 s of Python and
    a few seconds of forwards on 2 cores at base size)."""
    return [Workload("saved-tensor census on the meta device, batch census on the CPU", flops=0.0, overhead_s=10.0)]


def batch_claims(data: dict[str, Any], label: str) -> list[Claim]:
    """FLASH-Quad fits about 2x the Transformer's batch at base size and n = 1024: the ratio of the bytes a sequence
    saves in one Transformer++ layer to those in two GAU layers, against the fused and the written-out attention."""
    z, bytes_ = data["sizes"], data["batch"]
    quad = bytes_["flash-quad"]
    d = z["d"]
    where = f"d = {d}, e = {2 * d}, s = {z['s']}, h = {max(1, d // 64)}, n = {bytes_['n']:.0f}, float32"
    out = []
    for key, tfm, versus in (("quad-batch-base", "transformer", "the Transformer++ with its fused attention"),
                             ("quad-batch-base-unfused", UNFUSED,
                              "the same Transformer++ with its attention written out, its n × n softmax saved")):
        out.append(Claim(key, f"FLASH-Quad fits about 2x the Transformer's batch in the same activation memory, "
                         f"against {versus} (the bytes a sequence of its own saves for backward, two GAU layers "
                         f"against one Transformer++ layer; {where}; the lean GAU: "
                         f"{bytes_[tfm] / bytes_['flash-quad-lean']:.2f}x; {label})", SOURCE, 2.0,
                         bytes_[tfm] / quad, 0.0, 0.5,
                         "the source's 'nearly twice' is one significant figure: 1.5 to 2.5 round to 2; the byte "
                         "counts are exact", unit="x", alternative=1.0,
                         alternative_note="no advantage: the same batch"))
    return out


def claims(data: dict[str, Any], label: str) -> list[Claim]:
    """b h n^2 for multi-head attention and b n^2 for GAU; b (n/c) s e for FLASH's linear term; b n s^2 without
    chunks (against GAU's values of width e); the saving e/(c s) the source reads off its two formulas."""
    z = data["sizes"]
    b, e, s, n, h = z["batch"], z["e"], z["s"], z["n"], z["heads"]
    exact = "exact: elements of the largest saved tensor, counted on the meta device"
    size = f"b = {b}, n = {n}, s = {s}, e = {e}"
    out = [
        Claim("mha-matrix", f"Multi-head attention keeps a b h n² matrix for backward (largest saved n×n tensor, "
              f"h = {h}, {size}; {label})", SOURCE, float(b * h * n * n), float(data["mha"]["elements"]), 0.0, 0.0,
              exact, unit="elements", alternative=float(b * n * n),
              alternative_note="one n × n matrix for all heads, b n², as GAU's single head keeps"),
        Claim("gau-matrix", f"GAU's single head keeps b n² (the dense path's largest saved n×n tensor; {size}; "
              f"{label})", SOURCE, float(b * n * n), float(data["gau_dense"]["elements"]), 0.0, 0.0, exact,
              unit="elements", alternative=float(b * h * n * n),
              alternative_note=f"a matrix per head, b h n² with multi-head attention's h = {h}"),
        Claim("gau-lean-no-matrix", f"This book's lean GAU keeps no n×n matrix at all (saved n×n tensors; {size}; "
              f"{label})", "this book's lean path", 0.0, float(data["gau_lean"]["count"]), 0.0, 0.0,
              "exact: a count of saved tensors", kind="upper_bound", unit="tensors",
              alternative=float(data["gau_dense"]["count"]),
              alternative_note="the saved n×n tensors of the dense path, which keeps its matrix"),
    ]
    for c, row in data["flash"].items():
        out.append(Claim(f"flash-linear-state-c{c}", f"FLASH's causal linear term keeps b (n/c) s e (largest saved "
                         f"s×e tensor, c = {c}, {size}; {label})", SOURCE, float(b * (n // int(c)) * s * e),
                         float(row["elements"]), 0.0, 0.0, exact, unit="elements", alternative=float(b * n * s * e),
                         alternative_note="no chunks: a state per position, b n s e"))
    if "batch" in data:
        out.extend(batch_claims(data, label))
    out.append(Claim("unchunked-linear-state", f"Linear attention without chunks keeps b n s² (its prefix sums of "
                     f"k v^T, with GAU's values of width e; {size}; {label})", SOURCE, float(b * n * s * s),
                     float(data["prefix_e"]["elements"]), 0.0, 0.0, exact, unit="elements",
                     corrected=float(b * n * s * e), corrected_note="b n s e: a prefix state is s × e when the values "
                     "have GAU's width e; b n s² holds only for values of the key width s",
                     alternative=float(b * n * s * e), alternative_note="b n s e: values of GAU's width e"))
    out.append(Claim("unchunked-linear-state-width-s", f"With values of the key width s, linear attention without "
                     f"chunks keeps b n s² ({size}; {label})", SOURCE, float(b * n * s * s),
                     float(data["prefix_s"]["elements"]), 0.0, 0.0, exact, unit="elements",
                     alternative=float(b * n * s * e), alternative_note="b n s e: values of GAU's width e"))
    c_max = max(int(c) for c in data["flash"])
    chunked = float(data["flash"][str(c_max)]["elements"])
    out.append(Claim("chunk-saving", f"Chunking saves the linear term's memory by the factor e/(c s) of the source's "
                     f"two formulas (measured: FLASH's state over the unchunked one with the same values, c = {c_max}; "
                     f"{size}; {label})", SOURCE, e / (c_max * s), chunked / float(data["prefix_e"]["elements"]),
                     0.0, 0.0, "exact: a ratio of element counts", unit="ratio", corrected=1.0 / c_max,
                     corrected_note="1/c: both states are s × e, one per chunk against one per position; the "
                     "source's e/(c s) compares FLASH's values of width e with values of width s",
                     alternative=1.0 / c_max, alternative_note="1/c: both states s × e, one per chunk against one "
                     "per position"))
    return out
