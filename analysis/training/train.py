"""Training and evaluation of byte-level language models."""

from __future__ import annotations

import dataclasses
import math
import os
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import torch
import torch.nn.functional as F
from torch import nn

# console bars; disabled when stderr is not a terminal (notebooks, CI)
from tqdm import tqdm

from analysis.tasks.data import IGNORE_INDEX, BatchSource, fixed_windows, random_windows

# compiling costs tens of seconds once per process (less from inductor's on-disk cache): on CUDA, compile_mode "auto"
# compiles runs of at least this many steps and trains shorter ones eagerly
COMPILE_MIN_STEPS = 300


@dataclass(frozen=True)
class TrainConfig:
    """AdamW with linear warmup then cosine decay; clipping optional."""

    steps: int
    batch: int
    lr: float = 3e-3
    warmup: int = 0
    weight_decay: float = 0.1
    grad_clip: float | None = 1.0
    seed: int = 0

    def __post_init__(self) -> None:
        if not isinstance(self.steps, int) or self.steps < 1:
            raise ValueError(f"steps must be a positive integer; got {self.steps!r}")
        if not isinstance(self.batch, int) or self.batch < 1:
            raise ValueError(f"batch must be a positive integer; got {self.batch!r}")
        if not (math.isfinite(self.lr) and self.lr > 0):
            raise ValueError(f"lr must be positive and finite; got {self.lr!r}")
        if not isinstance(self.warmup, int) or not 0 <= self.warmup <= self.steps:
            raise ValueError(f"warmup must be an integer in [0, steps]; got {self.warmup!r}")
        if self.grad_clip is not None and not self.grad_clip > 0:
            raise ValueError(f"grad_clip must be positive or None; got {self.grad_clip!r}")

    def lr_at(self, step: int) -> float:
        """Learning rate at ``step`` (0-based): linear warmup, then cosine decay to 10%."""
        if step < self.warmup:
            return self.lr * (step + 1) / self.warmup
        frac = (step - self.warmup) / max(1, self.steps - self.warmup)
        return self.lr * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * frac)))


@dataclass
class TokenStats:
    """Per target token: probability of the correct token, entropy of the prediction, loss (nats)."""

    p_correct: npt.NDArray[np.float64]
    entropy: npt.NDArray[np.float64]
    loss: npt.NDArray[np.float64]
    target_index: npt.NDArray[np.int64] = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    position: npt.NDArray[np.int64] = field(default_factory=lambda: np.zeros(0, dtype=np.int64))


@torch.no_grad()
def token_stats(model: nn.Module, tokens: npt.NDArray[np.uint8], ctx: int, windows: int, device: torch.device) -> TokenStats:
    """Log-softmax in float64 over fixed validation windows -> (p_correct, entropy, loss) per token."""
    was_training = model.training
    model.eval()
    x, y, target_index = fixed_windows(tokens, ctx, windows)
    out_p, out_h, out_l = [], [], []
    for i in range(0, x.shape[0], 64):
        logits = model(x[i : i + 64].to(device)).double()
        logp = F.log_softmax(logits, dim=-1)
        lp_y = logp.gather(-1, y[i : i + 64].to(device)[..., None]).squeeze(-1)
        out_l.append((-lp_y).cpu())
        out_p.append(lp_y.exp().cpu())
        out_h.append(-(logp.exp() * logp).sum(-1).cpu())
    model.train(was_training)
    pos = np.broadcast_to(np.arange(x.shape[1]), x.shape)
    return TokenStats(
        p_correct=torch.cat(out_p).numpy().ravel(),
        entropy=torch.cat(out_h).numpy().ravel(),
        loss=torch.cat(out_l).numpy().ravel(),
        target_index=target_index.numpy().ravel(),
        position=pos.ravel().copy(),
    )


@dataclass
class TrainLog:
    """What a run did: steps, losses, validation, whether (and when) it diverged, and where it resumed."""

    steps: list[int] = field(default_factory=list)
    train_loss: list[float] = field(default_factory=list)
    val_steps: list[int] = field(default_factory=list)
    val_loss: list[float] = field(default_factory=list)
    diverged_at: int | None = None
    resumed_from: int | None = None
    compiled: bool | None = None  # None: eager as asked; True: torch.compile ran; False: it failed and the run was eager


class GradNorms:
    """Per backward pass, the total gradient norm ||g||_2 = sqrt(sum_p ||dL/dp||^2) before any clipping, collected by
    hooks on the parameters (a hook sees a parameter's whole gradient, summed over its uses).

    Call :meth:`step` once after each backward pass (``train_lm``'s ``on_step`` does, for steps >= 1) and
    :meth:`close` to remove the hooks; :attr:`norms` holds one value per step.
    """

    def __init__(self, model: nn.Module) -> None:
        params = [p for p in model.parameters() if p.requires_grad]
        if not params:
            raise ValueError("model has no parameter that requires a gradient")
        self.norms: list[float] = []
        self._sq: torch.Tensor | None = None
        self._seen = 0
        self._handles = [p.register_hook(self._add) for p in params]

    def _add(self, grad: torch.Tensor) -> None:
        sq = grad.detach().double().pow(2).sum()
        self._sq = sq if self._sq is None else self._sq + sq
        self._seen += 1

    def step(self) -> None:
        """Close the current backward pass: append its norm (NaN when no gradient arrived) and reset."""
        self.norms.append(math.sqrt(float(self._sq)) if self._sq is not None else math.nan)
        self._sq, self._seen = None, 0

    def close(self) -> None:
        """Remove the hooks."""
        for h in self._handles:
            h.remove()
        self._handles = []


def _save_checkpoint(path: Path, state: dict[str, Any]) -> None:
    """torch.save to a temporary file, then rename: an interruption never leaves half a checkpoint."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    torch.save(state, tmp)
    os.replace(tmp, path)


def resolve_compile_mode(mode: str | None, device_type: str, steps: int) -> str | None:
    """torch.compile's mode for a run of ``steps`` steps on ``device_type`` (None: eager). "auto" is
    "reduce-overhead" (CUDA graphs) on CUDA for runs of at least :data:`COMPILE_MIN_STEPS` steps, else eager."""
    if mode == "auto":
        return "reduce-overhead" if device_type == "cuda" and steps >= COMPILE_MIN_STEPS else None
    if mode not in (None, "default", "reduce-overhead", "max-autotune", "max-autotune-no-cudagraphs"):
        raise ValueError("compile_mode must be 'auto', None, 'default', 'reduce-overhead', 'max-autotune' or "
                         f"'max-autotune-no-cudagraphs'; got {mode!r}")
    return mode


def train_lm(
    model: nn.Module,
    tokens: npt.NDArray[np.uint8] | BatchSource,
    cfg: TrainConfig,
    ctx: int,
    device: torch.device,
    on_step: Callable[[int, nn.Module], None] | None = None,
    progress: bool = True,
    log_every: int = 10,
    val_tokens: npt.NDArray[np.uint8] | None = None,
    eval_every: int = 0,
    eval_windows: int = 16,
    checkpoint: str | os.PathLike[str] | None = None,
    checkpoint_every: int = 0,
    explode_factor: float = 3.0,
    compile_mode: str | None = "auto",
    check_every: int | None = None,
) -> TrainLog:
    """Minimise mean cross-entropy over scored targets; ``on_step(step, model)`` runs before step 0 and after each step.

    ``tokens`` is a byte corpus, from which random windows of ``ctx`` are drawn, or a batch source
    ``(batch, generator) -> (inputs, targets)`` drawing only from ``generator`` (a synthetic task); targets equal
    to IGNORE_INDEX are not scored.

    A non-finite loss, or one above ``explode_factor`` times the first, stops the run and is recorded as
    ``diverged_at`` rather than raised. With ``val_tokens`` and ``eval_every`` the validation loss is logged.
    With ``checkpoint`` the run saves model, optimiser, data-sampler state and log every ``checkpoint_every``
    steps, and a run started with an existing checkpoint resumes from it.

    On CUDA the step is made for the accelerator: bf16 autocast, fused AdamW, the model compiled with
    ``torch.compile`` (``compile_mode`` "auto" is "reduce-overhead", CUDA graphs, for a run of at least
    :data:`COMPILE_MIN_STEPS` steps; None trains eagerly; a compilation that fails falls back to eager with a
    warning) and the losses read back every ``check_every`` steps (default 16) instead of every step, so that the
    host never waits for the device in between. A divergence is then found at the next read-back: ``diverged_at``
    still names the first bad step, but up to ``check_every - 1`` further steps have run. On the CPU (default
    ``check_every`` 1, no compilation, unless asked) every step is checked before its update.
    """
    cuda = device.type == "cuda"
    check_every = (16 if cuda else 1) if check_every is None else check_every
    if not isinstance(check_every, int) or check_every < 1:
        raise ValueError(f"check_every must be a positive integer; got {check_every!r}")
    compile_mode = resolve_compile_mode(compile_mode, device.type, cfg.steps)
    gen = torch.Generator().manual_seed(cfg.seed)
    model.to(device).train()
    decay = [p for p in model.parameters() if p.dim() >= 2]
    no_decay = [p for p in model.parameters() if p.dim() < 2]
    opt = torch.optim.AdamW(
        [{"params": decay, "weight_decay": cfg.weight_decay}, {"params": no_decay, "weight_decay": 0.0}],
        lr=cfg.lr,
        betas=(0.9, 0.95),
        **({"fused": True} if cuda else {}),
    )
    autocast = cuda
    forward: Callable[[torch.Tensor], torch.Tensor] = model
    if compile_mode is not None:
        forward = torch.compile(model, mode=None if compile_mode == "default" else compile_mode, dynamic=False)
    if callable(tokens):
        draw: BatchSource = tokens
    else:
        data = torch.from_numpy(tokens)  # shared, uint8: windows are gathered and widened per batch

        def draw(size: int, generator: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
            return random_windows(data, ctx, size, generator)
    log = TrainLog()
    start = 0
    ckpt = Path(checkpoint) if checkpoint is not None else None
    if ckpt is not None and ckpt.exists():
        state = torch.load(ckpt, map_location=device, weights_only=False)
        model.load_state_dict(state["model"])
        opt.load_state_dict(state["optimizer"])
        gen.set_state(state["generator"])
        log = TrainLog(**state["log"])
        start = log.resumed_from = int(state["step"])
    first_loss: float | None = log.train_loss[0] if log.train_loss else None
    if on_step and start == 0:
        on_step(0, model)
    pending: list[tuple[int, torch.Tensor]] = []  # (step, loss) not yet read back from the device
    last = cfg.steps - 1

    def read_back() -> int | None:
        """Read the pending losses (one synchronisation), log them; the first non-finite or exploded step, if any."""
        nonlocal first_loss
        values = torch.stack([loss for _, loss in pending]).tolist() if len(pending) > 1 else [pending[0][1].item()]
        steps = [step for step, _ in pending]
        pending.clear()
        for step, value in zip(steps, values):
            first_loss = value if first_loss is None else first_loss
            if not math.isfinite(value) or value > explode_factor * first_loss:
                return step
            if step % log_every == 0 or step == last:
                log.steps.append(step + 1)
                log.train_loss.append(value)
        return None

    def loss_of(fwd: Callable[[torch.Tensor], torch.Tensor], x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        with torch.autocast(device_type=device.type, dtype=torch.bfloat16, enabled=autocast):
            logits = fwd(x)
        return F.cross_entropy(logits.float().reshape(-1, logits.shape[-1]), y.reshape(-1), ignore_index=IGNORE_INDEX)

    def first_compiled_step(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor | None:
        """Forward and backward through the compiled model (both compile here); None, with a warning, if it fails."""
        try:
            opt.zero_grad(set_to_none=True)
            loss = loss_of(forward, x, y)
            loss.backward()
            return loss
        except Exception as exc:  # noqa: BLE001 - any compiler error; eager training re-raises real bugs
            warnings.warn(f"torch.compile failed ({type(exc).__name__}: {str(exc)[:300]}); training eagerly")
            opt.zero_grad(set_to_none=True)
            return None

    compiling = forward is not model
    for step in tqdm(range(start, cfg.steps), disable=None if progress else True, desc="train", leave=False):
        for g in opt.param_groups:
            g["lr"] = cfg.lr_at(step)
        x, y = draw(cfg.batch, gen)
        x, y = x.to(device), y.to(device)
        backward_done = False
        if compiling:  # the first compiled step: compiling that fails falls back to eager training
            compiling = False
            first = first_compiled_step(x, y)
            log.compiled = first is not None
            if first is None:
                forward = model
            else:
                loss, backward_done = first, True
        if not backward_done:
            loss = loss_of(forward, x, y)
        pending.append((step, loss.detach()))
        checkpoint_due = bool(ckpt is not None and checkpoint_every
                              and ((step + 1) % checkpoint_every == 0 or step == last))
        if len(pending) >= check_every or step == last or checkpoint_due:
            bad = read_back()
            if bad is not None:
                log.diverged_at = bad
                break
        if not backward_done:
            opt.zero_grad(set_to_none=True)
            loss.backward()
        if cfg.grad_clip is not None:
            nn.utils.clip_grad_norm_(model.parameters(), cfg.grad_clip)
        opt.step()
        if val_tokens is not None and eval_every and ((step + 1) % eval_every == 0 or step == cfg.steps - 1):
            log.val_steps.append(step + 1)
            log.val_loss.append(float(token_stats(model, val_tokens, ctx, eval_windows, device).loss.mean()))
            model.train()
        if on_step:
            on_step(step + 1, model)
        if checkpoint_due:
            _save_checkpoint(ckpt, {"model": model.state_dict(), "optimizer": opt.state_dict(), "step": step + 1,
                                    "generator": gen.get_state(), "log": dataclasses.asdict(log)})
    return log
