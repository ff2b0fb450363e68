"""Seed ensembles: k models of one architecture (k initial draws) trained side by side in one process.

Their parameters are stacked along a new leading axis (``torch.func.stack_module_state``) and each step is one
vmapped forward and backward (``torch.func.functional_call``) over k batches, then one AdamW step on the stacked
tensors. AdamW and decoupled weight decay act element by element, and gradient clipping is applied per model
(each model's own gradient norm, as ``clip_grad_norm_`` computes it), so an ensemble step is k steps of
:func:`analysis.training.train.train_lm`'s update, up to the summation order of the vmapped kernels
(``tests/test_ensemble.py`` checks this against ``train_lm`` itself). On a GPU, k small models then cost about
the kernel launches of one; how much that gains has not been measured here. On the CPU, torch 2.13 has no batching
rule for its fused attention kernel (``scaled_dot_product_attention``) and loops over the models there.

A model whose forward pass cannot be vmapped (the lean GAU path's custom autograd function, a host read of a
tensor) is refused with a ValueError naming the cause: use ``gau_backend="dense"`` for an ensemble of GAUs.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Sequence

import torch
import torch.nn.functional as F
from torch import nn
from torch.func import functional_call, stack_module_state, vmap

from analysis.tasks.data import IGNORE_INDEX
from analysis.training.train import TrainConfig


class Ensemble:
    """k models trained as one: stacked parameters, vmapped loss, AdamW on the stack, per-model clipping."""

    def __init__(self, models: Sequence[nn.Module], cfg: TrainConfig) -> None:
        if len(models) < 1:
            raise ValueError(f"models must hold at least one model; got {len(models)}")
        names = [n for n, _ in models[0].named_parameters()]
        if any([n for n, _ in m.named_parameters()] != names for m in models[1:]):
            raise ValueError("models must share one architecture (the same parameter names)")
        self.k = len(models)
        self.cfg = cfg
        params, self.buffers = stack_module_state(list(models))
        self.params = {n: p.detach().clone().requires_grad_(True) for n, p in params.items()}
        self.base = copy.deepcopy(models[0]).to("meta")
        shapes = dict(models[0].named_parameters())
        decay = [self.params[n] for n in names if shapes[n].dim() >= 2]
        no_decay = [self.params[n] for n in names if shapes[n].dim() < 2]
        self.opt = torch.optim.AdamW(
            [{"params": decay, "weight_decay": cfg.weight_decay}, {"params": no_decay, "weight_decay": 0.0}],
            lr=cfg.lr, betas=(0.9, 0.95))

    def losses(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        """Each model's mean cross-entropy over its scored targets: x, y of shape (k, batch, ctx) -> (k,)."""
        if x.shape[0] != self.k or y.shape != x.shape:
            raise ValueError(f"x and y must have shape (k={self.k}, batch, ctx); got {tuple(x.shape)}, "
                             f"{tuple(y.shape)}")

        def one(params: dict[str, torch.Tensor], buffers: dict[str, torch.Tensor], xi: torch.Tensor,
                yi: torch.Tensor) -> torch.Tensor:
            logits = functional_call(self.base, (params, buffers), (xi,))
            return F.cross_entropy(logits.float().reshape(-1, logits.shape[-1]), yi.reshape(-1),
                                   ignore_index=IGNORE_INDEX)

        try:
            return vmap(one)(self.params, self.buffers, x, y)
        except RuntimeError as err:
            raise ValueError(f"this model's forward pass cannot be vmapped ({str(err).splitlines()[0]}); a GAU "
                             "needs gau_backend='dense' in an ensemble") from None

    def step(self, x: torch.Tensor, y: torch.Tensor, step: int) -> torch.Tensor:
        """One training step at the learning rate of ``step`` (TrainConfig.lr_at); returns the k losses."""
        for g in self.opt.param_groups:
            g["lr"] = self.cfg.lr_at(step)
        losses = self.losses(x, y)
        self.opt.zero_grad(set_to_none=True)
        losses.sum().backward()  # the models share no parameter: each gets its own loss's gradient
        if self.cfg.grad_clip is not None:
            grads = [p.grad for p in self.params.values() if p.grad is not None]
            norms = torch.stack([g.reshape(self.k, -1).pow(2).sum(1) for g in grads]).sum(0).sqrt()
            coef = (self.cfg.grad_clip / (norms + 1e-6)).clamp(max=1.0)  # clip_grad_norm_'s rule, per model
            for g in grads:
                g.mul_(coef.view(-1, *([1] * (g.dim() - 1))))
        self.opt.step()
        return losses.detach()

    def state_dicts(self) -> list[dict[str, torch.Tensor]]:
        """The k models' parameters and buffers, each as a state dict of the base architecture."""
        out = []
        for i in range(self.k):
            sd = {n: p[i].detach().clone() for n, p in self.params.items()}
            sd.update({n: b[i].clone() for n, b in self.buffers.items()})
            out.append(sd)
        return out


def train_ensemble(models: Sequence[nn.Module], batches: Sequence[tuple[torch.Tensor, torch.Tensor]],
                   cfg: TrainConfig) -> list[list[float]]:
    """Train ``models`` together for ``cfg.steps`` steps, step t on ``batches[t]`` (x, y of shape (k, batch, ctx));
    each model is updated in place. Returns each model's loss per step."""
    if len(batches) < cfg.steps:
        raise ValueError(f"batches must hold at least cfg.steps = {cfg.steps} steps; got {len(batches)}")
    ens = Ensemble(models, cfg)
    curves: list[list[float]] = [[] for _ in models]
    for t in range(cfg.steps):
        losses = ens.step(*batches[t], t)
        for i, v in enumerate(losses.tolist()):
            curves[i].append(v if math.isfinite(v) else math.nan)
    for model, sd in zip(models, ens.state_dicts()):
        keep = model.state_dict().keys()  # non-persistent buffers are not part of a state dict
        model.load_state_dict({n: v for n, v in sd.items() if n in keep})
    return curves
