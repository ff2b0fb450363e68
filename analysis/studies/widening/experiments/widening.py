"""Lossless widening (Su 2021, kexue.fm/archives/8444): every transform checked to rounding, its caveats trained, and whether it pays.

Measured: the largest logit difference between a small model and its widened copy, in float64 and float32, on real
text with every weight, bias and norm parameter drawn away from 0 and 1, for a BERT-style encoder, a pre-norm
decoder (Transformer++: RMSNorm, SwiGLU, RoPE), post-norm Transformers, GAU and FLASH, at factors 2 to 4 and 3/2;
the source's summary table row by row; then, on models trained on the corpus, the symmetry of the copies during
training, the gradient at the widened point, RoPE's pairwise repetition against exact placement, and widening a
partly trained small model against training the wide one from scratch for the same FLOPs.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from analysis.compute.cost import step_cost
from analysis.core.experiment import Workload, corpus_of, mean_se, run_seed
from analysis.core.stats import Estimate, detectable_multiple, mean_estimate, paired_estimate
from analysis.core.trial import Trial
from analysis.core.typed import OMIT_NONE, fields_of
from analysis.core.verify import Claim, estimate_fields
from analysis.models import widening as W
from analysis.models.bert import Bert, BertConfig
from analysis.models.lm import FeedForward, LanguageModel, ModelConfig, Residual
from analysis.tasks.data import PINNED_CORPUS_PATH
from analysis.training.train import TrainConfig, token_stats, train_lm

NAME = "widening"
PRIORITY = 25  # the gpu campaign's order (lower first; 50 by default): the order of the claims' stakes at gpu scale
DATA_VERSION = 3  # raised when the layout of the assembled data changes
SOURCE = "Su 2021, kexue.fm/archives/8444"
COMMENTS = "Su 2021, kexue.fm/archives/8444 (comments)"
BOOK = "this book (Su 2021's method, extended)"
EPS64 = float(np.finfo(np.float64).eps)
EPS32 = float(np.finfo(np.float32).eps)
BROKEN_SYMMETRY = 1e4 * EPS32  # a stream residual above 10x the symmetric model's 1000 float32 ulps: copies broken
EXACT_TOL = 1e-12  # relative, float64: the rounding level (about 4500 ulps)
ROUNDING_ALLOWANCE = 10.0  # how far a float64 gap may exceed the floor the float32 gap predicts: the precisions'
# kernels differ in blocking and vector width, so their rounding is not the same draw (a decade, set in advance). A real
# discrepancy does not shrink with the unit roundoff: it holds the float64 gap at its own size, so one above the
# allowance times the floor is caught and one below it is not (the claim's detection limit)
BROKEN_TOL = 1e-9  # a deviation above this is not rounding, in float64
BERT2BERT_SAVING = 0.45  # bert2BERT (Chen et al. 2022): about 45% of BERT-base pre-training compute saved
PRINTED = {  # the source's summary table for k = 2, as printed: (row, tensor, factor)
    "embedding": [("tok.weight", 2**-0.5)],
    "layernorm": [("emb_norm.weight", 2**-0.5), ("emb_norm.bias", 2**-0.5)],
    "attention-qk": [("layers.0.q.weight", 2**0.25 / 2), ("layers.0.q.bias", 2**0.25 / 2**0.5),
                     ("layers.0.k.weight", 2**0.25 / 2), ("layers.0.k.bias", 2**0.25 / 2**0.5)],
    "attention-vo": [("layers.0.v.weight", 0.5), ("layers.0.v.bias", 2**-0.5), ("layers.0.o.weight", 0.5),
                     ("layers.0.o.bias", 2**-0.5)],
    "ffn1": [("layers.0.w1.weight", 2**-0.5), ("layers.0.w1.bias", 1.0)],
    "ffn2": [("layers.0.w2.weight", 1 / (2 * 2**0.5)), ("layers.0.w2.bias", 0.5)],
    "output": [("head.weight", 2**-0.5), ("head.bias", 1.0)],
    # the text (not the table): the LayerNorm after the head's GELU dense layer "divides by one more sqrt(2)"
    "head-layernorm-text": [("head_norm.weight", 0.5), ("head_norm.bias", 0.5)],
}


@dataclass(frozen=True)
class Config:
    """Sizes of the exactness checks, and of the trained small / wide models and their budgets."""

    d: int  # small width of the exactness checks (divisible by heads and by 4 for 3/2 and 5/4)
    heads: int
    layers: int
    probe: int  # tokens per probe sequence
    factors: tuple[int, ...]
    train_d: int  # small width of the trained models; the wide ones are 2x
    train_layers: int
    ctx: int
    batch: int
    small_steps: int  # the small model's budget before widening
    wide_steps: int  # the scratch wide model's budget; the widened arm gets the same total FLOPs
    symmetry_steps: int
    memo_steps: int  # training on one fixed batch, for the gradient at a (near-)stationary point
    seeds: int
    eval_every: int
    eval_windows: int
    lr: float = 3e-3
    split: float = 0.1
    noise: float = 0.01
    dropout: float = 0.1
    corpus_file: str | None = None
    seed: int = 0


CONFIGS: dict[str, Config] = {
    "smoke": Config(d=16, heads=2, layers=1, probe=16, factors=(2,), train_d=16, train_layers=1, ctx=32, batch=4,
                    small_steps=4, wide_steps=8, symmetry_steps=4, memo_steps=4, seeds=2, eval_every=4,
                    eval_windows=2),
    # cpu: 6 seeds. At the spread of a 3-seed run (SD 0.22 of the FLOPs saving), telling a saving of 0 from
    # bert2BERT's 45% takes 5 (seeds_needed); the sixth allows for that SD's own uncertainty.
    "cpu": Config(d=48, heads=4, layers=2, probe=96, factors=(2, 3, 4), train_d=64, train_layers=2, ctx=128,
                  batch=16, small_steps=200, wide_steps=600, symmetry_steps=200, memo_steps=300, seeds=6,
                  eval_every=50, eval_windows=32),
    # gpu: 4 seeds, the number that tells a saving of 0 from bert2BERT's 45% (80% power, 95% two-sided t) at the
    # 6-seed cpu record's spread (SD 0.14 of the saving; seeds_needed, held by tests/test_widening.py); 3 did not.
    # No seed for that SD's own uncertainty, as the cpu config has: the first tier's budget has no room for it.
    "gpu": Config(d=96, heads=4, layers=4, probe=256, factors=(2, 3, 4), train_d=256, train_layers=6, ctx=512,
                  batch=32, small_steps=1000, wide_steps=3000, symmetry_steps=500, memo_steps=500, seeds=4,
                  eval_every=250, eval_windows=64,
                  corpus_file=PINNED_CORPUS_PATH),
}


def spread(model: nn.Module, seed: int) -> nn.Module:
    """Every parameter drawn away from its initial 0 or 1: matrices N(0, 1/fan_in), vectors 1 + N(0, 0.2^2) for norm
    weights and N(0, 0.2^2) otherwise (biases, offsets), so that no transform can pass by multiplying a zero."""
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            noise = torch.randn(p.shape, generator=gen, dtype=torch.float64).to(p.dtype)
            if p.dim() >= 2:
                p.copy_(noise / math.sqrt(p.shape[-1]))
            elif name.endswith(("norm.weight", "norm1.weight", "norm2.weight", "inner.weight", ".g", "gamma")):
                p.copy_(1 + 0.2 * noise)
            else:
                p.copy_(0.2 * noise)
    return model


def decoder_config(d: int, heads: int, layers: int, ctx: int, **kw: Any) -> ModelConfig:
    """The Transformer++ of this book: pre-RMSNorm, SwiGLU, RoPE."""
    base: dict[str, Any] = {"d": d, "heads": heads, "layers": layers, "ctx": ctx, "block": "transformer", "residual": "pre",
                                "norm": "rmsnorm", "ffn": "swiglu", "positions": "rope"}
    base.update(kw)
    return ModelConfig(**base)


def exactness_cases(cfg: Config) -> list[tuple[str, str, str, Any, Any, bool]]:
    """(label, family, factor, make small model, widen it, expected exact) for every case."""
    d, h, L = cfg.d, cfg.heads, cfg.layers
    ctx = max(cfg.probe, 8)
    bert = lambda **kw: (lambda: Bert(BertConfig(d=d, heads=h, layers=L, ctx=ctx, **kw)))
    lm = lambda **kw: (lambda: LanguageModel(decoder_config(d, h, L, ctx, **kw)))
    gau = lambda **kw: (lambda: LanguageModel(ModelConfig(d=d, layers=L, ctx=ctx, s=d // 2, **kw)))
    cases: list[tuple[str, str, str, Any, Any, bool]] = []
    for k in cfg.factors:
        cases.append((f"BERT, GELU, 1/sqrt(d'), tied, x{k}", "bert", str(k), bert(), lambda m, k=k: W.widen_bert(m, k), True))
    cases += [
        ("BERT, ReLU, untied output, x2", "bert", "2", bert(ffn="relu", tied=False), lambda m: W.widen_bert(m, 2), True),
        ("BERT, unscaled logits (T5-style), x2", "bert", "2", bert(scaled=False), lambda m: W.widen_bert(m, 2), True),
        ("BERT, global repetition, x2", "bert-broken", "2", bert(), lambda m: W.widen_bert(m, 2, repetition="global"), False),
        ("BERT, without the k^(1/4) on q, k, x2", "bert-broken", "2", bert(), lambda m: W.widen_bert(m, 2, qk_factor=False), False),
        ("BERT, GELU W_1 as a linear layer (w/2, b/sqrt 2), x2", "bert-broken", "2", bert(),
         lambda m: W.widen_bert(m, 2, ffn_copies=False), False),
        ("BERT, LayerNorm eps 1e-5 kept, x2", "bert-broken", "2", bert(eps=1e-5), lambda m: W.widen_bert(m, 2, exact_eps=False), False),
        ("BERT, LayerNorm eps 1e-12 kept, x2", "bert-broken", "2", bert(), lambda m: W.widen_bert(m, 2, exact_eps=False), False),
    ]
    for k in cfg.factors:
        cases.append((f"Transformer++, RoPE placed, x{k}", "decoder", str(k), lm(), lambda m, k=k: W.widen_lm(m, k * d), True))
    cases += [
        ("Transformer++, RoPE pairwise repetition, x2", "rope-approx", "2", lm(), lambda m: W.widen_lm(m, 2 * d, rope="pairs"), False),
        ("Transformer++, RoPE unit-wise repetition, x2", "rope-approx", "2", lm(), lambda m: W.widen_lm(m, 2 * d, rope="local"), False),
        ("post-LN Transformer, GELU, RoPE placed, x2", "decoder", "2", lm(residual="post", norm="layernorm", ffn="gelu"),
         lambda m: W.widen_lm(m, 2 * d), True),
        ("DeepNorm Transformer, ReLU, ScaleNorm, x2", "decoder", "2", lm(residual="deepnorm", norm="scalenorm", ffn="relu"),
         lambda m: W.widen_lm(m, 2 * d), True),
        ("GAU, relu^2/(ns), post-LN, RoPE placed, x2", "gau", "2", gau(block="gau"), lambda m: W.widen_lm(m, 2 * d), True),
        ("GAU, relu^2/(ns), x3", "gau", "3", gau(block="gau"), lambda m: W.widen_lm(m, 3 * d), True),
        ("GAU, relu^2(qk/n), x2", "gau", "2", gau(block="gau", gau_norm="relu2_n2"), lambda m: W.widen_lm(m, 2 * d), True),
        ("GAU, softmax log_512 n, x2", "gau", "2", gau(block="gau", gau_norm="softmax_log512"), lambda m: W.widen_lm(m, 2 * d), True),
        ("FLASH, chunk 8, x2", "gau", "2", gau(block="flash", chunk=8), lambda m: W.widen_lm(m, 2 * d), True),
        ("GAU, RoPE pairwise repetition, x2", "rope-approx", "2", gau(block="gau"), lambda m: W.widen_lm(m, 2 * d, rope="pairs"), False),
        ("Transformer++, learned positions, x3/2", "fraction", "3/2", lm(positions="learned"), lambda m: W.widen_lm(m, 3 * d // 2), True),
        ("Transformer++, learned positions, x5/4", "fraction", "5/4", lm(positions="learned"), lambda m: W.widen_lm(m, 5 * d // 4), True),
        ("pre-LayerNorm Transformer, learned positions, x3/2", "fraction-ln", "3/2",
         lm(positions="learned", norm="layernorm", ffn="gelu"), lambda m: W.widen_lm(m, 3 * d // 2), False),
    ]
    return cases


def exactness(cfg: Config, text: torch.Tensor) -> list[dict[str, Any]]:
    """Per case: the largest absolute and relative logit difference in float64 and in float32."""
    rows = []
    for i, (label, family, factor, make, widen, expected) in enumerate(exactness_cases(cfg)):
        out: dict[str, Any] = {"case": label, "family": family, "factor": factor, "expected_exact": expected}
        for dtype, tag in ((torch.float64, "f64"), (torch.float32, "f32")):
            with W.default_dtype(dtype):
                torch.manual_seed(cfg.seed)
                small = spread(make().to(dtype), run_seed(cfg, i))
                widening = widen(small)
                out[f"{tag}_abs"], out[f"{tag}_rel"] = W.max_logit_difference(small, widening.model, text)
                out["exact_by_construction"] = widening.exact
        rows.append(out)
    return rows


def table_rows(cfg: Config, text: torch.Tensor) -> dict[str, Any]:
    """The source's table for k = 2 against the exact widening: per tensor the printed factor, the factor the exact
    widening has (least squares of wide against the repeated small tensor, with its residual), and the logit
    difference when the row's tensors are set as printed and everything else is exact."""
    with W.default_dtype(torch.float64):
        small = spread(Bert(BertConfig(d=cfg.d, heads=cfg.heads, layers=cfg.layers, ctx=max(cfg.probe, 8))).double(),
                       cfg.seed)
        assert isinstance(small, Bert)
        exact = W.widen_bert(small, 2)
        params_small = dict(small.named_parameters())
        rows: dict[str, Any] = {}
        for row, tensors in PRINTED.items():
            entries = []
            printed_model = W.widen_bert(small, 2).model
            params_printed = dict(printed_model.named_parameters())
            for name, factor in tensors:
                rep = params_small[name].detach()
                for axis in range(rep.dim()):  # an embedding table repeats its columns only
                    if not (name == "tok.weight" and axis == 0):
                        rep = rep.repeat_interleave(2, dim=axis)
                wide = dict(exact.model.named_parameters())[name].detach()
                derived = float((wide * rep).sum() / (rep * rep).sum())
                residual = float((wide - derived * rep).norm() / wide.norm())
                with torch.no_grad():
                    params_printed[name].copy_(factor * rep)
                entries.append({"tensor": name, "printed": factor, "derived": derived, "residual": residual})
            _, rel = W.max_logit_difference(small, printed_model, text)
            rows[row] = {"tensors": entries, "logit_rel": rel}
        wide_norm: Any = exact.model.emb_norm
        eps = {"small": float(small.emb_norm.eps), "wide": float(wide_norm.eps)}
    return {"rows": rows, "eps": eps}


def _val(model: nn.Module, val: np.ndarray, cfg: Config) -> float:
    return float(token_stats(model, val, cfg.ctx, cfg.eval_windows, torch.device("cpu")).loss.mean())


def _hidden(model: LanguageModel, probe: torch.Tensor) -> torch.Tensor:
    was = model.training
    model.eval()
    with torch.no_grad():
        out = model(probe, return_hidden=True)
    model.train(was)
    assert isinstance(out, tuple)
    return out[1][-1]


def _train(model: LanguageModel, corpus: Any, cfg: Config, steps: int, seed: int, probe: torch.Tensor | None = None,
           widening: W.Widening | None = None) -> dict[str, Any]:
    """train_lm for ``steps`` with validation every eval_every; for a widened model also its symmetry: the residual of
    its stream outside the copied subspace, and of its linear weights outside the lifted matrices (all but q, k, v,
    whose placed RoPE pairs are meant to train apart)."""
    sym: dict[str, list[float]] = {"steps": [], "residual": [], "weights": []}

    def on_step(step: int, m: nn.Module) -> None:
        if widening is not None and probe is not None and (step % cfg.eval_every == 0 or step == steps):
            sym["steps"].append(step)
            sym["residual"].append(W.subspace_residual(_hidden(m, probe), widening.stream))  # type: ignore[arg-type]
            sym["weights"].append(W.weight_residual(m, {n: lift for n, lift in widening.lifts.items()
                                                         if not n.endswith("qkv.weight")}))

    log = train_lm(model, corpus.train, TrainConfig(steps=steps, batch=cfg.batch, lr=cfg.lr, seed=seed), cfg.ctx,
                   torch.device("cpu"), on_step=on_step if widening is not None else None, progress=False,
                   val_tokens=corpus.val, eval_every=cfg.eval_every, eval_windows=cfg.eval_windows)
    return {"val_steps": [0] + log.val_steps, "val_loss": [math.nan] + log.val_loss, "diverged_at": log.diverged_at,
            "symmetry": sym}


def _unit_dropout(model: LanguageModel, p: float) -> None:
    """Dropout on each FFN's hidden units (W_1's output), which the book's model does not have: a forward hook."""
    for module in model.modules():
        if isinstance(module, FeedForward):
            module.w1.register_forward_hook(lambda m, i, o: F.dropout(o, p, m.training))


def _residual_dropout(model: LanguageModel, p: float) -> None:
    """Dropout on every sublayer's output before it joins the stream (BERT's residual dropout,
    x + Dropout(f(x))), which the book's model does not have: a forward hook on each residual branch."""
    for module in model.modules():
        if isinstance(module, Residual):
            module.f.register_forward_hook(lambda m, i, o: F.dropout(o, p, m.training))


def training_steps(cfg: Config) -> dict[str, Any]:
    """The small and wide decoders' step FLOPs (counted on the meta device), and the steps a widened model trains on
    for the FLOPs the scratch model has left."""
    small_cfg = decoder_config(cfg.train_d, 4, cfg.train_layers, cfg.ctx)
    flops_small = step_cost(small_cfg, cfg.batch, cfg.ctx)[2]
    flops_wide = step_cost(W.wide_lm_config(small_cfg, 2 * cfg.train_d), cfg.batch, cfg.ctx)[2]
    wide_after = max(1, round(cfg.wide_steps - cfg.small_steps * flops_small / flops_wide))
    return {"flops_small_step": flops_small, "flops_wide_step": flops_wide, "wide_after": wide_after}


def training_sizes(cfg: Config) -> dict[str, Any]:
    """:func:`training_steps` and the parameters of the small and wide decoders (built on the meta device: no random
    draw)."""
    small_cfg = decoder_config(cfg.train_d, 4, cfg.train_layers, cfg.ctx)
    with torch.device("meta"):
        small, wide = LanguageModel(small_cfg), LanguageModel(W.wide_lm_config(small_cfg, 2 * cfg.train_d))
    return {**training_steps(cfg), "small_params": small.num_parameters(), "wide_params": wide.num_parameters()}


@dataclass(frozen=True)
class Exactness:
    """The float64 checks of widening, the table of its cases, and the threads they ran on."""

    exactness: list[dict[str, Any]]
    table: dict[str, Any]
    threads: int


@dataclass(frozen=True)
class Seed:
    """One replicate's training: the small model, its validation loss, the widened and scratch arms, and (replicate
    0 only) the symmetry variants."""

    seed: int
    small: dict[str, Any]
    small_val: float
    arms: dict[str, dict[str, Any]]
    variants: dict[str, dict[str, Any]] | None = field(default=None, metadata=OMIT_NONE)


@dataclass(frozen=True)
class Stationary:
    """Losses and gradient norms of the small model, its exact copy and its random split, and the lifted gradient's
    largest relative difference from the copy's."""

    loss_small: float
    loss_copy: float
    loss_split: float
    grad_small: float
    grad_copy: float
    grad_split: float
    grad_copy_linear: float
    grad_split_linear: float
    grad_lifted_linear: float
    gradient_identity_rel: float
    gradient_identity_rel32: float  # the same check on the same weights, in float32
    memo_steps: int
    d: int


def training_seed(cfg: Config, corpus: Any, r: int) -> Seed:
    """Replicate r (torch seeded by the runner with run_seed(cfg, r)): small model trained small_steps; widened
    exactly (RoPE placed), exactly with a random split of the copies' weights, and by pairwise repetition, each
    trained on for the FLOPs the scratch model has left; the scratch wide model. Replicate 0 also trains the
    symmetry variants (exact copies, random split, noise, attention dropout, unit dropout, residual dropout) for
    symmetry_steps each."""
    small_cfg = decoder_config(cfg.train_d, 4, cfg.train_layers, cfg.ctx)
    wide_cfg = W.wide_lm_config(small_cfg, 2 * cfg.train_d)
    wide_after = training_steps(cfg)["wide_after"]
    probe = torch.from_numpy(corpus.val[: 2 * cfg.ctx].astype(np.int64)).view(2, cfg.ctx)
    seed = run_seed(cfg, r)
    small = LanguageModel(small_cfg)
    small_log = _train(small, corpus, cfg, cfg.small_steps, seed)
    small_val = _val(small, corpus.val, cfg)
    arms: dict[str, Any] = {}
    for arm, rope, split in (("placed", "place", 0.0), ("pairs", "pairs", 0.0), ("split", "place", cfg.split)):
        widening = W.widen_lm(small, 2 * cfg.train_d, rope=rope, split=split, seed=seed)
        at_widening = _val(widening.model, corpus.val, cfg)
        assert isinstance(widening.model, LanguageModel)
        log = _train(widening.model, corpus, cfg, wide_after, seed + 1, probe, widening)
        log["val_loss"][0] = at_widening
        arms[arm] = log
    torch.manual_seed(seed + 2)
    scratch = LanguageModel(wide_cfg)
    at_init = _val(scratch, corpus.val, cfg)
    arms["scratch"] = _train(scratch, corpus, cfg, cfg.wide_steps, seed + 2)
    arms["scratch"]["val_loss"][0] = at_init
    small_log["val_loss"][0] = math.nan
    if r == 0:
        variants = {}
        for name, kw in (("exact copies", {}), ("split", {"split": cfg.split}), ("noise", {"noise": cfg.noise}),
                         ("attention dropout", {}), ("unit dropout", {}), ("residual dropout", {})):
            widening = W.widen_lm(small, 2 * cfg.train_d, seed=seed, **kw)  # type: ignore[arg-type]
            wide = widening.model
            assert isinstance(wide, LanguageModel)
            if name == "attention dropout":
                for att in wide.attention_layers():
                    att.dropout = cfg.dropout
            if name == "unit dropout":
                _unit_dropout(wide, cfg.dropout)
            if name == "residual dropout":
                _residual_dropout(wide, cfg.dropout)
            with torch.no_grad():
                wide.eval()
                deviation = float((wide(probe) - small.eval()(probe)).abs().max())
            log = _train(wide, corpus, cfg, cfg.symmetry_steps, seed + 1, probe, widening)
            log["initial_logit_difference"] = deviation
            variants[name] = log
    return Seed(seed, small_log, small_val, arms, variants if r == 0 else None)


def stationary(cfg: Config, corpus: Any) -> Stationary:
    """A small decoder (learned positions) trained on one fixed batch to near zero loss; in float64 and in float32,
    the relative difference between the widened model's gradient and the lifted small gradient (worst linear weight),
    and in float64 the gradient norms of the small model, its exact copy and its random split."""
    seed = run_seed(cfg, 900)  # the runner seeds torch with it
    small_cfg = decoder_config(cfg.train_d // 2, 4, cfg.train_layers, cfg.ctx, positions="learned")
    small = LanguageModel(small_cfg)
    batch = torch.from_numpy(corpus.train[: 4 * (cfg.ctx + 1)].astype(np.int64)).view(4, cfg.ctx + 1)
    x, y = batch[:, :-1], batch[:, 1:]
    opt = torch.optim.AdamW(small.parameters(), lr=cfg.lr, weight_decay=0.0)
    for _ in range(cfg.memo_steps):
        loss = F.cross_entropy(small(x).reshape(-1, small_cfg.vocab), y.reshape(-1))
        opt.zero_grad()
        loss.backward()
        opt.step()

    def grads(model: nn.Module) -> tuple[float, dict[str, torch.Tensor]]:
        model.zero_grad()
        out = F.cross_entropy(model(x).reshape(-1, small_cfg.vocab), y.reshape(-1))
        out.backward()
        return float(out.detach()), {n: p.grad.detach().clone() for n, p in model.named_parameters() if p.grad is not None}

    def identity_gap(widening: W.Widening, g_small: dict[str, torch.Tensor], g_wide: dict[str, torch.Tensor]
                     ) -> tuple[float, dict[str, torch.Tensor]]:
        lifted = {name: W.lift_gradient(g_small[name], out, inp) for name, (out, inp) in widening.lifts.items()}
        return max(float((g_wide[n] - g).norm() / g.norm().clamp(min=1e-300)) for n, g in lifted.items()), lifted

    copy32 = W.widen_lm(small, 2 * small_cfg.d)  # float32 first: .double() below converts the small model in place
    gap32, _ = identity_gap(copy32, grads(small)[1], grads(copy32.model)[1])
    with W.default_dtype(torch.float64):
        small64 = small.double()
        loss_small, g_small = grads(small64)
        copy = W.widen_lm(small64, 2 * small_cfg.d)
        split = W.widen_lm(small64, 2 * small_cfg.d, split=cfg.split, seed=seed)
        loss_copy, g_copy = grads(copy.model)
        loss_split, g_split = grads(split.model)
    worst, lifted = identity_gap(copy, g_small, g_copy)
    norm = lambda g: math.sqrt(sum(float((v.double() ** 2).sum()) for v in g.values()))
    linear = lambda g: math.sqrt(sum(float((g[n] ** 2).sum()) for n in copy.lifts))
    return Stationary(loss_small, loss_copy, loss_split, norm(g_small), norm(g_copy), norm(g_split), linear(g_copy),
                      linear(g_split), linear(lifted), worst, gap32, cfg.memo_steps, small_cfg.d)


def rounding_floor(gap32: float) -> float:
    """The float64 rounding floor of a check that misses by ``gap32`` in float32: gap32 * u64 / u32 = gap32 * 2^-29
    (rounding error scales with the unit roundoff u; a discrepancy in exact arithmetic does not)."""
    if not math.isfinite(gap32) or gap32 < 0:
        raise ValueError(f"gap32 must be a finite relative difference >= 0; got {gap32!r}")
    return gap32 * EPS64 / EPS32


def trials(cfg: Config) -> list[Trial]:
    """The exactness checks and the source's table (one trial: they share the random stream from cfg.seed), one
    trained replicate per seed, and the stationary-point check."""
    out = [Trial("exactness", cfg.seed, {"part": "exactness"})]
    out += [Trial(f"training.seed{r}", run_seed(cfg, r), {"part": "training", "replicate": r}) for r in range(cfg.seeds)]
    return out + [Trial("stationary", run_seed(cfg, 900), {"part": "stationary"})]


def run_trial(cfg: Config, trial: Trial, device: torch.device) -> Exactness | Seed | Stationary:
    """One part of the chapter's measurements (on the CPU: float64 checks, and training small enough for it)."""
    corpus = corpus_of(cfg)
    part = trial.params["part"]
    if part == "exactness":
        text = torch.from_numpy(corpus.val[: 2 * cfg.probe].astype(np.int64)).view(2, cfg.probe)
        return Exactness(exactness(cfg, text), table_rows(cfg, text), torch.get_num_threads())
    if part == "training":
        return training_seed(cfg, corpus, trial.params["replicate"])
    return stationary(cfg, corpus)


def assemble(cfg: Config, results: list[Exactness | Seed | Stationary], device_type: str) -> dict[str, Any]:
    """Every measurement of the chapter, in the record's layout (this experiment runs on the CPU)."""
    first, *seeds, last = results
    assert isinstance(first, Exactness) and isinstance(last, Stationary)
    return {"device_type": "cpu", "corpus": corpus_of(cfg).summary(), "exactness": first.exactness,
            "table": first.table, "training": {**training_sizes(cfg), "seeds": [fields_of(r) for r in seeds]},
            "stationary": fields_of(last), "threads": first.threads}


# --- summaries ---------------------------------------------------------------------------------------------------


def _crossing(flops: list[float], losses: list[float], target: float) -> float | None:
    """The FLOPs at which a validation curve first reaches ``target`` (linear between evaluations), or None."""
    for i in range(1, len(losses)):
        a, b = losses[i - 1], losses[i]
        if math.isfinite(b) and b <= target:
            if not math.isfinite(a) or a <= target:
                return flops[i]
            return flops[i - 1] + (flops[i] - flops[i - 1]) * (a - target) / (a - b)
    return None


def curves(tr: dict[str, Any], seed: dict[str, Any]) -> dict[str, tuple[list[float], list[float]]]:
    """Per arm (validation) FLOPs and loss, the widened arms' FLOPs counting the small model's training."""
    fs, fw = tr["flops_small_step"], tr["flops_wide_step"]
    small = seed["small"]
    out = {"small": ([s * fs for s in small["val_steps"][1:]], small["val_loss"][1:])}
    spent = small["val_steps"][-1] * fs
    for arm in ("placed", "pairs", "split"):
        log = seed["arms"][arm]
        out[arm] = ([spent + s * fw for s in log["val_steps"]], log["val_loss"])
    log = seed["arms"]["scratch"]
    out["scratch"] = ([s * fw for s in log["val_steps"]], log["val_loss"])
    return out


def saving(tr: dict[str, Any], seed: dict[str, Any], arm: str = "placed") -> float:
    """FLOPs saved by widening: 1 - F_widened(L_scratch) / F_total when the widened arm reaches the scratch arm's
    final loss, else 1 - F_total / F_scratch(L_widened) (negative: widening cost FLOPs)."""
    c = curves(tr, seed)
    fw, lw = c["small"][0] + c[arm][0][1:], c["small"][1] + c[arm][1][1:]
    fs, ls = c["scratch"]
    total = fs[-1]
    if lw[-1] <= ls[-1]:
        reach = _crossing(fw, lw, ls[-1])
        return 1 - (reach if reach is not None else total) / total
    reach = _crossing(fs, ls, lw[-1])
    return 1 - total / (reach if reach is not None else total)


def summary(data: dict[str, Any]) -> dict[str, Any]:
    """The numbers the chapter states: exactness by family, the trained comparisons with seed errors."""
    ex = data["exactness"]
    fam = lambda f: [r for r in ex if r["family"] == f]
    tr = data["training"]
    seeds = tr["seeds"]
    arms = ("placed", "pairs", "split", "scratch")
    final = {arm: mean_se(s["arms"][arm]["val_loss"][-1] for s in seeds) for arm in arms}
    jump = {arm: mean_se(s["arms"][arm]["val_loss"][0] - s["small_val"] for s in seeds) for arm in arms[:3]}
    first_eval = {arm: mean_se(s["arms"][arm]["val_loss"][1] for s in seeds) for arm in arms[:3]}
    # pairwise against placed RoPE, paired by seed (the same small model): after the first evaluation and at the end
    pairs_gap = {when: mean_se(s["arms"]["pairs"]["val_loss"][i] - s["arms"]["placed"]["val_loss"][i] for s in seeds)
                 for when, i in (("first", 1), ("final", -1))}
    v = seeds[0].get("variants", {})
    symmetry_copy = max(max(s["arms"]["placed"]["symmetry"]["residual"]) for s in seeds)
    symmetry_split = min(s["arms"]["split"]["symmetry"]["residual"][-1] for s in seeds)
    return {
        "exact_worst": {f: max(r["f64_rel"] for r in fam(f)) for f in ("bert", "decoder", "gau", "fraction")},
        "exact_worst_f32": max(r["f32_rel"] for r in ex if r["expected_exact"]),
        "broken": {r["case"]: r["f64_rel"] for r in ex if not r["expected_exact"]},
        "rope_best": min(r["f64_rel"] for r in ex if r["family"] in ("decoder",) and "RoPE" in r["case"]),
        "final": final, "jump": jump, "first_eval": first_eval, "pairs_gap": pairs_gap,
        "saving": mean_se(saving(tr, s) for s in seeds), "saving_split": mean_se(saving(tr, s, "split") for s in seeds),
        "variant_val": {k: x["val_loss"][-1] for k, x in v.items()},
        "symmetry_copy": symmetry_copy, "symmetry_split": symmetry_split,
        "symmetry_variants": {k: max(x["symmetry"]["residual"]) for k, x in v.items()},
        "weight_variants": {k: max(x["symmetry"]["weights"]) for k, x in v.items()},
        "weights_placed": max(max(s["arms"]["placed"]["symmetry"]["weights"]) for s in seeds),
        "variant_initial": {k: x["initial_logit_difference"] for k, x in v.items()},
        "wide_after": tr["wide_after"], "flops_ratio": tr["flops_small_step"] / tr["flops_wide_step"],
    }


def saving_estimate(data: dict[str, Any], arm: str = "placed") -> Estimate:
    """The FLOPs saving of widening (:func:`saving`) as a mean over seeds, with its SE and n - 1 df."""
    tr = data["training"]
    return mean_estimate([saving(tr, s, arm) for s in tr["seeds"]], "seeds")


def seeds_needed(sd: float, effect: float, most: int = 1000) -> int | None:
    """The fewest seeds n whose two-sided 95% t test detects ``effect`` with 80% power when the seeds' standard
    deviation is ``sd`` (detectable = lambda(n - 1) sd / sqrt(n) < effect); None beyond ``most``."""
    for n in range(2, most + 1):
        if detectable_multiple(n - 1) * sd / math.sqrt(n) < abs(effect):
            return n
    return None


def seeds_to_tell(est: Estimate, effect: float = BERT2BERT_SAVING) -> str:
    """In words: how many seeds, at this run's seed spread, would tell a saving of 0 from ``effect``."""
    if not est.resolved:
        return "one seed: no error estimate"
    sd = est.se * math.sqrt(est.n)
    n = seeds_needed(sd, effect)
    return (f"at this seed spread (SD {sd:.2f}) telling 0 from {effect:.0%} needs "
            + (f"{n} seeds" if n is not None else "more than 1000 seeds"))


def paired_over_seeds(seeds: list[dict[str, Any]], a: str, b: str, at: int) -> Estimate:
    """Validation loss of arm ``a`` minus arm ``b`` at evaluation ``at``, paired by seed (the same small model and
    batches)."""
    return paired_estimate([s["arms"][a]["val_loss"][at] for s in seeds], [s["arms"][b]["val_loss"][at] for s in seeds])


# a case's label in the claims' notation: its ASCII maths as maths
CASE_MATH = (("1/sqrt(d')", "$1/\\sqrt{d'}$"), ("k^(1/4)", "$k^{1/4}$"), ("(w/2, b/sqrt 2)", "($w/2$, $b/\\sqrt{2}$)"),
             ("W_1 as", "$W_1$ as"), ("eps", "$\\epsilon$"), ("relu^2", "relu²"), (", x", ", ×"))


def case_words(case: str) -> str:
    """A case's label as a claim writes it: its ASCII maths in $...$."""
    for ascii_text, math_text in CASE_MATH:
        case = case.replace(ascii_text, math_text)
    return case


def nearest_lossy(rows: list[dict[str, Any]], family: str, marker: str = "") -> tuple[str, float]:
    """The lossy case of ``family`` (its label containing ``marker``) nearest to exact: (label, float64 gap)."""
    row = min((r for r in rows if r["family"] == family and marker in r["case"]), key=lambda r: r["f64_rel"])
    return row["case"], row["f64_rel"]


def lossy_rival(rows: list[dict[str, Any]], family: str, marker: str = "") -> dict[str, Any]:
    """A lossless claim's rival: the gap of the nearest lossy widening of the same models, measured in this run."""
    case, gap = nearest_lossy(rows, family, marker)
    return {"alternative": gap,
            "alternative_note": f"the nearest lossy widening measured here ({case_words(case)}), its gap"}


def exact_rival(row: dict[str, Any]) -> dict[str, Any]:
    """A broken widening's rival: the gap of the exact widening of the same model, rounding only."""
    return {"alternative": row["f64_rel"], "alternative_note": f"the exact widening ({case_words(row['case'])}), rounding only"}


def table_rival(row: str, printed: float) -> dict[str, Any]:
    """A table row's rival factor: without the $k^{1/4}$ for $q, k$; else one division by $\\sqrt{2}$ fewer, the
    slip the table makes on $W_2$'s bias."""
    if row == "attention-qk":
        return {"alternative": printed / 2**0.25, "alternative_note": "the factor without the $k^{1/4}$ on $q, k$"}
    return {"alternative": printed * math.sqrt(2), "alternative_note": "the factor with one division by $\\sqrt{2}$ "
                                                                      "fewer, the table's slip on $W_2$'s bias"}


def claims(data: dict[str, Any], label: str) -> list[Claim]:
    """The chapter's claims from one run."""
    s = summary(data)
    ex = {r["case"]: r for r in data["exactness"]}
    rows_ex = data["exactness"]
    rounding = f"{EXACT_TOL:g} relative in float64 (about {EXACT_TOL / EPS64:.0f} ulps: rounding over a few layers)"
    broken = f"{BROKEN_TOL:g} relative in float64: anything above it is not rounding"
    out = [
        Claim("bert-lossless", f"A BERT (GELU, $1/\\sqrt{{d'}}$ attention, tied MLM head, every bias nonzero) widened "
              f"$k$-fold ($k$ = {', '.join(str(k) for k in sorted({int(r['factor']) for r in data['exactness'] if r['family'] == 'bert'}))}) "
              f"computes the same logits (worst relative difference, float64; {label})", SOURCE, 0.0,
              s["exact_worst"]["bert"], 0.0, EXACT_TOL, rounding, kind="upper_bound", unit="relative", approx_rel=0.0,
              **lossy_rival(rows_ex, "bert-broken")),
        Claim("decoder-lossless", f"GPT/T5-style decoders widen losslessly whatever the activation: pre-RMSNorm "
              f"SwiGLU, post-LN GELU and DeepNorm ReLU Transformers (worst relative difference, float64; {label})", SOURCE,
              0.0, s["exact_worst"]["decoder"], 0.0, EXACT_TOL, rounding, kind="upper_bound", unit="relative",
              approx_rel=0.0, **lossy_rival(rows_ex, "rope-approx", "Transformer++")),
        Claim("rope-lossy", f"With RoPE a model cannot be widened losslessly: pairwise repetition is only "
              f"approximate (smallest relative difference of any RoPE widening here, float64; {label})", SOURCE,
              BROKEN_TOL, s["rope_best"], 0.0, 0.0, broken, kind="lower_bound", unit="relative", approx_rel=0.0,
              corrected=0.0, corrected_note="placing small pair $i$ at wide pair $ki$, which rotates at the same "
              "frequency, and holding the query's other pairs at zero is exact", alternative=0.0,
              alternative_note="a lossless RoPE widening: a gap of 0 up to rounding"),
        Claim("rope-pairs-approx", f"Pairwise repetition of RoPE changes the function (relative logit "
              f"difference, Transformer++ ×2, float64; {label})", SOURCE, BROKEN_TOL,
              ex["Transformer++, RoPE pairwise repetition, x2"]["f64_rel"], 0.0, 0.0, broken, kind="lower_bound",
              unit="relative", approx_rel=0.0, **exact_rival(ex["Transformer++, RoPE placed, x2"])),
        Claim("gau-lossless", f"GAU and FLASH widen losslessly ($U, V, Z$ as copies; the $q, k$ scale-offsets of "
              f"each of the $k$ copies scaled by $k^{{-1/4}}$, so that $\\tilde q \\cdot \\tilde k = \\sqrt{{k}}\\, q \\cdot k$, for "
              f"relu²/(ns) and softmax, and by $k^{{-1/2}}$ for relu²(qk/n); worst relative "
              f"difference, float64; {label})", BOOK, 0.0, s["exact_worst"]["gau"], 0.0, EXACT_TOL, rounding,
              kind="upper_bound", unit="relative", approx_rel=0.0, **lossy_rival(rows_ex, "rope-approx", "GAU")),
        Claim("global-breaks", f"Global repetition $[x, x]$ scrambles the heads of multi-head attention (relative "
              f"logit difference, BERT ×2, float64; {label})", SOURCE, BROKEN_TOL,
              ex["BERT, global repetition, x2"]["f64_rel"], 0.0, 0.0, broken, kind="lower_bound", unit="relative",
              approx_rel=0.0, **exact_rival(ex["BERT, GELU, 1/sqrt(d'), tied, x2"])),
        Claim("qk-factor", f"With logits scaled by $1/\\sqrt{{d'}}$, $q$ and $k$ need the extra $k^{{1/4}}$ (relative logit "
              f"difference without it, BERT ×2, float64; {label})", SOURCE, BROKEN_TOL,
              ex["BERT, without the k^(1/4) on q, k, x2"]["f64_rel"], 0.0, 0.0, broken, kind="lower_bound",
              unit="relative", approx_rel=0.0, **exact_rival(ex["BERT, GELU, 1/sqrt(d'), tied, x2"])),
        Claim("gelu-copies", f"$\\mathrm{{GELU}}(x/\\sqrt{{2}}) \\neq \\mathrm{{GELU}}(x)/\\sqrt{{2}}$: the linear-layer transform on $W_1$ breaks a "
              f"GELU FFN (relative logit difference, BERT ×2, float64; {label})", SOURCE, BROKEN_TOL,
              ex["BERT, GELU W_1 as a linear layer (w/2, b/sqrt 2), x2"]["f64_rel"], 0.0, 0.0, broken,
              kind="lower_bound", unit="relative", approx_rel=0.0, **exact_rival(ex["BERT, GELU, 1/sqrt(d'), tied, x2"])),
    ]
    rows = data["table"]["rows"]
    r2 = "\\sqrt{2}"
    names = {"embedding": f"Embedding: ${{x}}/{r2}$", "layernorm": f"LayerNorm: $\\gamma/{r2}$, $\\beta/{r2}$",
             "attention-qk": f"Attention $q, k$: $w \\cdot 2^{{1/4}}/2$, $b \\cdot 2^{{1/4}}/{r2}$",
             "attention-vo": f"Attention $v, o$: $w/2$, $b/{r2}$", "ffn1": f"FeedForward $W_1$: $w/{r2}$, $b$",
             "ffn2": f"FeedForward $W_2$: $w/(2{r2})$, $b/2$", "output": f"Output (MLM dense): $w/{r2}$, $b$",
             "head-layernorm-text": f"The MLM head's LayerNorm divides by one more ${r2}$ (text)"}
    for row, info in rows.items():
        worst = max(info["tensors"], key=lambda t: abs(t["printed"] - t["derived"]))
        ok = abs(worst["printed"] - worst["derived"]) <= 1e-12
        out.append(Claim(
            f"table-{row}", f"Table row \u201c{names[row]}\u201d is exact: factor of {worst['tensor']} (×2; with the row "
            f"as printed the logits differ by {info['logit_rel']:.1e} relative; {label})", SOURCE, worst["printed"],
            worst["derived"], 0.0, 1e-12, "1e-12: the factor of the widening shown exact to rounding above "
            "(least squares against the repeated small tensor, residual < 1e-15)", unit="factor", approx_rel=0.0,
            corrected=None if ok else worst["derived"],
            corrected_note="" if ok else (f"{worst['derived']:.4f} = $1/\\sqrt{{2}}$: $W_2$'s bias is lifted like its output, "
                                          "\u2018repeat, divide by $\\sqrt{2}$\u2019" if row == "ffn2" else
                                          f"{worst['derived']:.4f}: LayerNorm ignores its input's scale, so the head's "
                                          "LayerNorm takes the table's $\\gamma/\\sqrt{2}$, $\\beta/\\sqrt{2}$"),
            **table_rival(row, worst["printed"])))
    eps = data["table"]["eps"]
    kept = ex["BERT, LayerNorm eps 1e-5 kept, x2"]["f64_rel"]
    out.append(Claim("layernorm-eps", f"LayerNorm widens exactly with its $\\epsilon$ unchanged ($\\epsilon$ factor; keeping "
                     f"$\\epsilon = 10^{{-5}}$ changes the logits by {kept:.1e} relative, $10^{{-12}}$ by "
                     f"{ex['BERT, LayerNorm eps 1e-12 kept, x2']['f64_rel']:.1e}; {label})", SOURCE, 1.0,
                     eps["wide"] / eps["small"], 0.0, 1e-12, "1e-12: the $\\epsilon$ of the widening shown exact above",
                     unit="factor", approx_rel=0.0, corrected=0.5, corrected_note="$\\epsilon/k$: the wide variance is "
                     "$\\sigma^2/k$, so $\\epsilon$ must shrink with it", alternative=1 / 2,
                     alternative_note="$\\epsilon/k$ at $k = 2$, shrunk with the wide variance $\\sigma^2/k$"))
    out.append(Claim("fraction-ln", f"LayerNorm cannot be widened exactly by a non-integer factor with "
                     f"copies (relative logit difference, pre-LN Transformer ×3/2, float64; {label})", COMMENTS,
                     BROKEN_TOL, ex["pre-LayerNorm Transformer, learned positions, x3/2"]["f64_rel"], 0.0, 0.0, broken,
                     kind="lower_bound", unit="relative", approx_rel=0.0,
                     **exact_rival(ex["Transformer++, learned positions, x3/2"])))
    out.append(Claim("fraction-rms", f"... but an RMSNorm model widens exactly by 3/2 and 5/4: unit $i$ copied "
                     f"$m_i$ times, each copy scaled $1/\\sqrt{{m_i}}$, $\\epsilon$ by $d/D$ (worst relative difference, float64; "
                     f"{label})", BOOK, 0.0, s["exact_worst"]["fraction"], 0.0, EXACT_TOL, rounding,
                     kind="upper_bound", unit="relative", approx_rel=0.0,
                     **lossy_rival(rows_ex, "fraction-ln")))
    out.append(Claim("copies-stay", f"Identical copies receive identical gradients: trained on, the exactly "
                     f"widened model stays in the copied subspace (largest residual of its stream outside it, "
                     f"float32; {label})", COMMENTS, 0.0, s["symmetry_copy"], 0.0, 1e3 * EPS32,
                     "1000 float32 ulps", kind="upper_bound", unit="relative", approx_rel=0.0,
                     alternative=s["symmetry_split"], alternative_note="copies whose input weights were split at "
                     "random, trained the same: their residual"))
    unbroken = {"alternative": s["symmetry_copy"], "alternative_note": "the same copies trained without dropout: "
                "their residual"}
    sv = s["symmetry_variants"]
    if "attention dropout" in sv:
        out.append(Claim("dropout-breaks", f"Dropout breaks the copies' symmetry (stream residual after "
                         f"training with dropout on the attention weights; {label})", COMMENTS, BROKEN_SYMMETRY,
                         sv["attention dropout"], 0.0, 0.0, "10x the symmetric model's 1000 float32 ulps",
                         kind="lower_bound", unit="relative", approx_rel=0.0,
                         corrected=0.0, corrected_note=f"attention dropout drops a head's probabilities, which all its "
                         f"copies share; dropout on the FFN's hidden units makes their weights differ (weight residual "
                         f"{s['weight_variants'].get('unit dropout', math.nan):.2g}) but the stream stays copied "
                         f"({sv.get('unit dropout', math.nan):.2g}); a random split of the copies' input weights breaks "
                         f"the stream ({sv.get('split', math.nan):.2g})"
                         + (f", and so does dropout on the sublayers' outputs ({sv['residual dropout']:.2g})"
                            if "residual dropout" in sv else ""), **unbroken))
    if "residual dropout" in sv:
        out.append(Claim("dropout-residual-breaks", f"Dropout breaks the copies' symmetry (stream residual after "
                         f"training with dropout on every sublayer's output before the residual sum, BERT's "
                         f"residual dropout; {label})", COMMENTS, BROKEN_SYMMETRY, sv["residual dropout"], 0.0, 0.0,
                         "10x the symmetric model's 1000 float32 ulps", kind="lower_bound", unit="relative",
                         approx_rel=0.0, **unbroken))
    out.append(stationary_claim(data["stationary"], label))
    tr = data["training"]
    for key, arm, what in (("saving", "placed", "exact copies"), ("saving-split", "split",
                                                                 "copies with a random split of their weights")):
        est = saving_estimate(data, arm)
        fields = estimate_fields(est, "the per-seed FLOPs saving")
        both = all(abs(est.value - v) <= fields["tolerance"] for v in (0.0, BERT2BERT_SAVING))
        out.append(Claim(f"{key}", f"Widening a partly trained small model ({what}) and training on saves "
                         f"compute against training the wide model from scratch (fraction of FLOPs saved to reach the "
                         f"same validation loss, {est.n} seeds; {seeds_to_tell(est)}; {label})",
                         "Chen et al. 2022 (bert2BERT); Wang et al. 2023 (LiGO)", BERT2BERT_SAVING, unit="fraction",
                         approx_rel=0.0, corrected=0.0, corrected_note="no saving, as the source's author answers in "
                         "the comments (here: a 2-layer byte-level model trained for a few hundred steps)"
                         + (f"; it fails too because widening costs here: the widened model needs "
                            f"{-est.value:.0%} more FLOPs than training from scratch, beyond the interval"
                            if est.value + fields["tolerance"] < 0 else ""),
                         effect=BERT2BERT_SAVING, alternative=0.0 if both else None,
                         alternative_note="no saving (the source's author): the interval holds both 0 and the "
                                          "published saving" if both else "", **fields))
    gap = paired_over_seeds(tr["seeds"], "pairs", "placed", -1)
    jump = mean_estimate([s["arms"]["pairs"]["val_loss"][0] - s["small_val"] for s in tr["seeds"]], "seeds")
    steps = tr["seeds"][0]["arms"]["pairs"]["val_steps"][-1]
    out.append(Claim("rope-recovers", f"Continued training recovers what pairwise RoPE repetition loses "
                     f"(validation loss of the pairwise arm minus the placed arm, paired by seed, {steps} steps after "
                     f"widening, against the {jump.value:.3f} nats the pairwise widening costs at once; {label})",
                     SOURCE, 0.0, kind="upper_bound", unit="nats", approx_rel=0.0, effect=jump.value,
                     **estimate_fields(gap, "the paired loss difference", sided="one")))
    return out


def stationary_claim(st: dict[str, Any], label: str) -> Claim:
    """The comments' stationary-point objection: the widened gradient equals the lifted small one (eq-lift with a and
    c swapped), its float64 gap bounded by ROUNDING_ALLOWANCE times the floor the float32 gap predicts."""
    floor = rounding_floor(st["gradient_identity_rel32"])
    # the split widening's gradient: its norm's gap to the lifted one bounds its relative difference from below
    rival = ({} if "grad_split_linear" not in st else
             {"alternative": abs(st["grad_split_linear"] - st["grad_lifted_linear"]) / st["grad_lifted_linear"],
              "alternative_note": "a widening whose copies' weights are split at random: the gap of its gradient "
                                  "norm to the lifted one, a lower bound on its relative difference"})
    return Claim("stationary", f"A trained small model widens to a point whose gradient is its own, lifted: a "
                 f"stationary point stays stationary (relative difference from the lifted gradient, every linear "
                 f"weight, float64; {label})", COMMENTS, 0.0, st["gradient_identity_rel"], 0.0,
                 ROUNDING_ALLOWANCE * floor, f"{ROUNDING_ALLOWANCE:g}x the float64 rounding floor that the same check "
                 f"in float32 predicts ({st['gradient_identity_rel32']:.2g} × 2⁻²⁹ = {floor:.2g}): rounding shrinks "
                 f"with the unit roundoff, a discrepancy in exact arithmetic does not", kind="upper_bound",
                 unit="relative", approx_rel=0.0, **rival)


def trial_plan(cfg: Config, trial: Trial) -> list[Workload]:
    """The trained models of a replicate (small, two widened arms, scratch; replicate 0 adds four symmetry variants),
    or the counted exactness checks; the stationary check is too small to count."""
    part = trial.params["part"]
    small = decoder_config(cfg.train_d, 4, cfg.train_layers, cfg.ctx)
    wide = W.wide_lm_config(small, 2 * cfg.train_d)
    evals = (cfg.wide_steps // cfg.eval_every + 1) * -(-cfg.eval_windows // 64)
    if part == "exactness":
        return [Workload("exactness checks (counted)", flops=2.0 * 40 * 2 * cfg.probe * 12 * cfg.layers * (4 * cfg.d) ** 2,
                         memory_bytes=8.0 * 2 * cfg.probe * 256 * 40)]
    if part == "stationary":
        return []
    out = [Workload("small decoder", small, cfg.batch, cfg.ctx, cfg.small_steps, evals),
           Workload("wide decoder (scratch and two widened arms)", wide, cfg.batch, cfg.ctx, cfg.wide_steps, evals, 3)]
    if trial.params["replicate"] == 0:
        out.append(Workload("wide decoder, symmetry variants", wide, cfg.batch, cfg.ctx, cfg.symmetry_steps, evals, 4))
    return out
