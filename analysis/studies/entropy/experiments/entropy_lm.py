"""Entropy against loss in a trained byte-level language model.

Two runs of the same model:

* on the real corpus (standard-library sources, or ``corpus_file``): the
  per-token cloud of (probability of the right byte, entropy of the prediction)
  at initialisation, early and late in training, and its largest excess over
  the bound H_max(L, K = 256) of :func:`analysis.theory.entropy.entropy_upper_bound`;
* on a random Markov chain of known entropy rate: the model's validation loss
  against the true model's loss on the same tokens (the floor no model beats);
* the same corpus run for each of ``others`` (a post-norm GAU and a FLASH language model of about the
  Transformer's parameters), so that the bound and calibration are checked on them too.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from analysis.core.experiment import Workload, corpus_of
from analysis.core.stats import Estimate, from_se, mean_estimate
from analysis.core.trial import Trial
from analysis.core.typed import fields_of
from analysis.core.verify import Claim, estimate_fields
from analysis.models.lm import LanguageModel, ModelConfig
from analysis.tasks.data import Corpus, MarkovSource, PINNED_CORPUS_PATH
from analysis.theory.entropy import entropy_upper_bound
from analysis.training.train import TokenStats, TrainConfig, token_stats, train_lm

NAME = "entropy-lm"
DATA_VERSION = 2  # raised when the layout of the record's data changes
VOCAB = 256


@dataclass(frozen=True)
class Config:
    """Everything a run depends on; one per scale in CONFIGS."""

    model: ModelConfig
    train: TrainConfig
    snapshots: tuple[int, ...]  # steps at which per-token statistics are taken; 0 = initialisation
    eval_windows: int
    max_points: int  # points of the cloud stored per snapshot
    markov_order: int
    markov_alphabet: int
    markov_concentration: float
    markov_train_tokens: int
    markov_val_tokens: int
    markov_steps: int
    others: tuple[tuple[str, ModelConfig], ...] = ()  # (name, model) trained on the corpus like ``model``
    corpus_file: str | None = None
    seed: int = 0

    def __post_init__(self) -> None:
        if not self.snapshots or any(s < 0 or s > self.train.steps for s in self.snapshots):
            raise ValueError(f"snapshots must be steps in [0, {self.train.steps}]; got {self.snapshots!r}")
        for name in ("eval_windows", "max_points", "markov_train_tokens", "markov_val_tokens", "markov_steps"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be positive; got {getattr(self, name)!r}")
        names = [name for name, _ in self.others]
        if len(set(names)) != len(names) or not all(n.replace("-", "").isalnum() for n in names):
            raise ValueError(f"others must have distinct names of letters, digits and -; got {names!r}")
        if any(m.ctx != self.model.ctx for _, m in self.others):
            raise ValueError("every model in others must have the context length of model")


def _others(d: int, layers: int, ctx: int, s: int, chunk: int) -> tuple[tuple[str, ModelConfig], ...]:
    """A post-norm GAU and a FLASH LM with 2 layers per Transformer layer (e = 2d: about the Transformer's size)."""
    return tuple((name, ModelConfig(d=d, layers=2 * layers, block=block, residual="post", ctx=ctx, s=s, chunk=chunk))
                 for name, block in (("GAU", "gau"), ("FLASH", "flash")))


def _cfg(model: ModelConfig, steps: int, batch: int, lr: float, snapshots: tuple[int, ...], windows: int, points: int,
         markov_tokens: tuple[int, int], markov_steps: int, others: tuple[tuple[str, ModelConfig], ...]) -> Config:
    return Config(
        model=model,
        train=TrainConfig(steps=steps, batch=batch, lr=lr, warmup=max(1, steps // 20)),
        snapshots=snapshots,
        eval_windows=windows,
        max_points=points,
        # Order 1: a model learns it within these budgets (an order-2 chain with random
        # transitions looks uniform given one symbol, and its plateau outlasts a smoke run).
        markov_order=1,
        markov_alphabet=26,
        markov_concentration=0.3,
        markov_train_tokens=markov_tokens[0],
        markov_val_tokens=markov_tokens[1],
        markov_steps=markov_steps,
        others=others,
    )


CONFIGS: dict[str, Config] = {
    "smoke": _cfg(ModelConfig.gpt(d=32, layers=1, heads=2, ctx=32), 30, 8, 3e-3, (0, 5, 30), 16, 512, (20_000, 4_000), 30,
                  _others(32, 1, 32, 16, 8)),
    "cpu": _cfg(ModelConfig.gpt(d=96, layers=2, heads=4, ctx=64), 600, 32, 3e-3, (0, 40, 600), 160, 4000, (200_000, 20_000), 200,
                _others(96, 2, 64, 32, 16)),
    "gpu": dataclasses.replace(_cfg(ModelConfig.gpt(d=384, layers=6, heads=6, ctx=256), 3000, 64, 1e-3, (0, 100, 3000), 384, 6000, (2_000_000, 200_000), 2000,
                _others(384, 6, 256, 128, 64)),
                              corpus_file=PINNED_CORPUS_PATH),
}




def _subsample(n: int, k: int) -> np.ndarray:
    return np.unique(np.linspace(0, n - 1, min(n, k)).round().astype(np.int64))


def window_means(values: np.ndarray, position: np.ndarray) -> np.ndarray:
    """The mean of ``values`` over each evaluation window, the windows told apart by ``position`` (each token's place
    in its window, 0 at a window's first token, in window order)."""
    if values.shape != position.shape or not values.size or position[0] != 0:
        raise ValueError("values and position must be non-empty arrays of one shape, position starting at 0")
    window = np.cumsum(position == 0) - 1
    return np.bincount(window, weights=values) / np.bincount(window)


def snapshot(step: int, stats: TokenStats, max_points: int) -> dict[str, Any]:
    """Summary of one cloud: mean loss and entropy, largest excess over the bound, loss minus entropy per evaluation
    window over all its tokens (the units of the calibration claims), and a subsample of points."""
    loss = np.maximum(stats.loss, 0.0)  # float64 log-softmax may give -1e-17 for a certain token
    bound = entropy_upper_bound(loss, VOCAB)
    excess = stats.entropy - bound
    keep = _subsample(loss.size, max_points)
    n = loss.size
    calib = loss - stats.entropy  # E[L - H] = 0 for a calibrated model
    return {
        "step": step,
        "tokens": int(n),
        "val_loss": float(loss.mean()),
        "val_loss_se": float(loss.std(ddof=1) / np.sqrt(n)),
        "mean_entropy": float(stats.entropy.mean()),
        "loss_minus_entropy": float(calib.mean()),
        "loss_minus_entropy_se": float(calib.std(ddof=1) / np.sqrt(n)),
        "window_loss_minus_entropy": window_means(calib, stats.position).tolist(),
        "max_excess_over_bound": float(excess.max()),
        "median_gap_to_bound": float(np.median(-excess)),
        "median_fraction_of_bound": float(np.median(stats.entropy / np.where(bound > 0, bound, np.nan))),
        # the plotted cloud, at 6 decimals (enough for a figure, a third of the bytes)
        "p_correct": np.round(stats.p_correct[keep], 6),
        "entropy": np.round(stats.entropy[keep], 6),
        "loss": np.round(loss[keep], 6),
    }


@dataclass(frozen=True)
class CorpusRun:
    """A model trained on the corpus: its snapshots of the per-token cloud and its training loss."""

    corpus: dict[str, Any]
    parameters: int
    snapshots: list[dict[str, Any]]
    train_steps: list[int]
    train_loss: list[float]
    diverged_at: int | None


@dataclass(frozen=True)
class MarkovRun:
    """A model trained on a Markov chain, against the true model on the same validation tokens."""

    corpus: dict[str, Any]
    entropy_rate: float
    tokens: int
    model_loss: float
    true_loss: float
    true_loss_se: float
    excess_loss: float
    excess_loss_se: float
    uniform_loss: float
    train_steps: list[int]
    train_loss: list[float]
    diverged_at: int | None


def run_corpus(cfg: Config, corpus: Corpus, device: torch.device, model_cfg: ModelConfig | None = None) -> CorpusRun:
    """Train ``model_cfg`` (default cfg.model) on ``corpus``; a snapshot of the per-token cloud at each of cfg.snapshots."""
    model = LanguageModel(model_cfg or cfg.model)
    snaps: list[dict[str, Any]] = []

    def on_step(step: int, m: torch.nn.Module) -> None:
        if step in cfg.snapshots:
            snaps.append(snapshot(step, token_stats(m, corpus.val, cfg.model.ctx, cfg.eval_windows, device), cfg.max_points))

    log = train_lm(model, corpus.train, cfg.train, cfg.model.ctx, device, on_step, progress=False)
    return CorpusRun(corpus.summary(), model.num_parameters(), snaps, log.steps, log.train_loss, log.diverged_at)


def run_markov(cfg: Config, device: torch.device) -> MarkovRun:
    """Train on a Markov chain; compare the model's loss with the true model's on the same validation tokens."""
    source = MarkovSource(cfg.markov_order, cfg.markov_alphabet, cfg.markov_concentration, seed=cfg.seed)
    corpus = source.corpus(cfg.markov_train_tokens, cfg.markov_val_tokens)
    model = LanguageModel(cfg.model)
    train_cfg = dataclasses.replace(cfg.train, steps=cfg.markov_steps, warmup=max(1, cfg.markov_steps // 20))
    log = train_lm(model, corpus.train, train_cfg, cfg.model.ctx, device, progress=False)
    stats = token_stats(model, corpus.val, cfg.model.ctx, cfg.eval_windows, device)
    # Compare only targets whose window holds the full Markov context.
    mask = stats.position + 1 >= cfg.markov_order
    true_nll = source.nll(corpus.val)[stats.target_index[mask] - cfg.markov_order]
    model_nll = stats.loss[mask]
    diff = model_nll - true_nll
    n = int(mask.sum())
    return MarkovRun(corpus.summary(), source.entropy_rate, n, float(model_nll.mean()), float(true_nll.mean()),
                     float(true_nll.std(ddof=1) / np.sqrt(n)), float(diff.mean()), float(diff.std(ddof=1) / np.sqrt(n)),
                     float(np.log(cfg.markov_alphabet)), log.steps, log.train_loss, log.diverged_at)


def trials(cfg: Config) -> list[Trial]:
    """The corpus model (seed cfg.seed), the Markov-chain model (cfg.seed + 1: its own initial draw) and each of
    ``others`` on the corpus (cfg.seed)."""
    return ([Trial("real", cfg.seed), Trial("markov", cfg.seed + 1)]
            + [Trial(f"other.{name}", cfg.seed, {"name": name}) for name, _ in cfg.others])


def run_trial(cfg: Config, trial: Trial, device: torch.device) -> CorpusRun | MarkovRun:
    """One model trained: on the corpus with its snapshots, or on the Markov chain against the true model."""
    if trial.key == "markov":
        return run_markov(cfg, device)
    return run_corpus(cfg, corpus_of(cfg), device, dict(cfg.others)[trial.params["name"]] if trial.params else None)


def assemble(cfg: Config, results: list[CorpusRun | MarkovRun], device_type: str) -> dict[str, Any]:
    """The three kinds of run, by name; plain data (lists and floats) ready for a results record."""
    real, markov, *others = results
    return {"device_type": device_type, "real": fields_of(real), "markov": fields_of(markov),
            "others": {name: fields_of(r) for (name, _), r in zip(cfg.others, others)}}


WINDOW_UNITS = "evaluation windows"


def calibration_estimate(snap: dict[str, Any]) -> Estimate:
    """Mean loss minus mean entropy of a snapshot over all its tokens, as the mean of its W windows' means, with the
    standard error of that mean over the windows, SE = s_w / sqrt(W), and W - 1 df.

    Tokens of one evaluation window share their context, so they are not independent; the windows do not overlap
    and are spread evenly over the validation text, so the windows are the units. Every token counts: the mean is
    that of the whole evaluated text (its windows all hold the same number of tokens), not of the plotted
    subsample."""
    return mean_estimate([float(v) for v in snap["window_loss_minus_entropy"]], WINDOW_UNITS)


def calibration_gaps(runs: dict[str, dict[str, Any]]) -> dict[tuple[str, str], Estimate]:
    """Per pair of architectures (a, b), in the order of ``runs``, the difference of their late calibration gaps,
    (L - H)_a - (L - H)_b, paired by evaluation window (every run is evaluated on the same windows): the mean of the
    per-window differences, SE over the windows (W - 1 df)."""
    late = {name: np.asarray(run["snapshots"][-1]["window_loss_minus_entropy"], dtype=float)
            for name, run in runs.items()}
    names = list(late)
    if len({v.size for v in late.values()}) > 1:
        raise ValueError("runs must be evaluated on the same windows; got different numbers of windows")
    return {(a, b): mean_estimate([float(x) for x in late[a] - late[b]], WINDOW_UNITS)
            for i, a in enumerate(names) for b in names[i + 1:]}


def _model_claims(run: dict[str, Any], label: str, name: str) -> list[Claim]:
    """The bound and calibration claims of one model's corpus run (``name`` '' for the Transformer)."""
    snaps = run["snapshots"]
    worst = max(snaps, key=lambda s: s["max_excess_over_bound"])
    late = snaps[-1]
    tokens = sum(s["tokens"] for s in snaps)
    slug = f"-{name.lower()}" if name else ""
    which = f"{name} " if name else ""
    calib = calibration_estimate(late)
    return [
        Claim(
            key=f"lm-bound{slug}",
            statement=f"No token of a trained byte-level {which}LM has more entropy than $H_{{\\max}}(L, 256)$ ({label}, {tokens} tokens over {len(snaps)} snapshots)",
            source="bound derived in this chapter from the notes' curve",
            predicted=0.0,
            measured=worst["max_excess_over_bound"],
            uncertainty=1e-12,
            tolerance=1e-9,
            tolerance_basis="float64 log-softmax over 256 logits: rounding below 1e-12 nats; 1e-9 leaves a 1000x margin",
            kind="upper_bound",
            unit="nats (largest $H - H_{\\max}$)",
            alternative=max(max(e - l for e, l in zip(s["entropy"], s["loss"])) for s in snaps),
            alternative_note="the per-token bound $H \\leq L$ (Gibbs' inequality taken token by token), over the "
                             "stored tokens",
        ),
        Claim(
            key=f"lm-calibration{slug}",
            statement=f"A trained {which}model's mean entropy equals its mean loss (calibration): mean loss minus mean "
                      f"entropy over {late['tokens']} tokens, step {late['step']} ({label})",
            source="$E_{y \\sim q}[-\\ln q_y] = H(q)$ when the model's $q$ is the data distribution",
            provenance="book",
            predicted=0.0,
            **estimate_fields(calib, f"the mean of $L - H$ over all {late['tokens']:,} tokens, as the mean of "
                                     f"its {calib.n} windows' means (a window's tokens share their context)"),
            unit="nats",
            # a model calibrated on its training data: its entropy tracks the training loss, not the validation loss
            alternative=late["val_loss"] - float(np.mean(run["train_loss"][-5:])),
            alternative_note="overconfidence by the generalisation gap, validation minus final training loss",
        ),
    ]


def claims(data: dict[str, Any], label: str) -> list[Claim]:
    """The chapter's claims measured by one run (``label`` says which: scale, live or recorded)."""
    markov = data["markov"]
    out = _model_claims(data["real"], label, "")
    for name, run in data.get("others", {}).items():
        out += _model_claims(run, label, name)
    excess = from_se(markov["excess_loss"], markov["excess_loss_se"], markov["tokens"], "tokens")
    fields = estimate_fields(excess, "the paired per-token difference model - true loss", sided="one")
    fields["tolerance_basis"] += ("; tokens taken as independent, which they are not (the record keeps no "
                                  "per-sequence values), so the interval is too narrow; the verdict does not depend "
                                  "on it while the difference is positive")
    return out + [
        Claim(
            key="markov-floor",
            statement=f"A model's validation loss on a Markov source stays above the true model's loss on the same "
                      f"tokens: model minus true loss ({label})",
            source="Gibbs' inequality: cross-entropy $\\geq$ entropy",
            provenance="book",
            predicted=0.0,
            **fields,
            kind="lower_bound",
            unit="nats/token",
            # the scale of a model's excess over the floor: a model that learned nothing sits this far above it
            effect=markov["uniform_loss"] - markov["true_loss"],
        ),
    ]


def trial_plan(cfg: Config, trial: Trial) -> list[Workload]:
    """A corpus model with its snapshots, or the Markov-chain model."""
    b, ctx = cfg.train.batch, cfg.model.ctx
    evals = -(-cfg.eval_windows // b)
    if trial.key == "markov":
        return [Workload("Markov model", cfg.model, b, ctx, cfg.markov_steps, evals)]
    name = trial.params.get("name")
    model = dict(cfg.others)[name] if name else cfg.model
    return [Workload(f"{name} corpus model" if name else "corpus model", model, b, ctx, cfg.train.steps,
                     evals * len(cfg.snapshots))]
