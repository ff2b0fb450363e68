"""Which attention normalisation of GAU survives a change of length: trained at one length, evaluated at 1/4x to 8x.

Four normalisations of a post-norm GAU language model (:mod:`analysis.models.gau`): relu^2(q.k)/(t s) with t the
keys the row sees (Su's 1/(ns)), relu^2(q.k/t) (the paper's appendix, 1/n^2), softmax(q.k/sqrt(s)), and softmax with
its logits multiplied by log_512 t (GAU-alpha's entropy-invariant scaling). Each is trained at length n, then:

* **recall** (:class:`analysis.tasks.length.SpacedLookupTask`): the queries sit at the end, so every query row holds the
  whole sequence; evaluated at spans n/4 .. 8n with the filler spread as in training (new distances and more keys)
  or all of it before the bindings (``near``: the distances of training, only more keys): accuracy, and each GAU
  layer's attention at the query rows (mass, entropy);
* **text** (the byte corpus): the loss at every position of windows of 8n, against the loss at the same positions
  predicted from their last n tokens (the row length of training), which separates what the extra context does
  from what position does; and the attention entropy of every row against its position.

Seeds are paired: a seed gives every normalisation the same initial draw and the same batches.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from analysis.core.experiment import Workload, corpus_of, mean_se, run_seed
from analysis.core.stats import Estimate, mean_estimate, paired_estimate
from analysis.core.trial import Trial
from analysis.core.typed import fields_of
from analysis.core.verify import Claim, estimate_fields
from analysis.models.lm import LanguageModel, ModelConfig
from analysis.tasks.data import PINNED_CORPUS_PATH, fixed_windows
from analysis.tasks.length import SpacedLookupTask, attention_rows, position_loss, truncated_context_loss
from analysis.tasks.recall import IGNORE, recall_metrics
from analysis.training.train import TrainConfig, train_lm

NAME = "gau-length"
PRIORITY = 48  # the gpu campaign's order (lower first; 50 by default): the order of the claims' stakes at gpu scale
DATA_VERSION = 1  # raised when the layout of the assembled data changes
NORMS = ("relu2_ns", "relu2_n2", "softmax", "softmax_log512")
NORM_LABELS = {"relu2_ns": "relu²/(ns)", "relu2_n2": "relu²(qk/n)", "softmax": "softmax",
               "softmax_log512": "softmax · log₅₁₂ n"}
LAYOUTS = ("spread", "near")
LEARNED = 0.9  # accuracy at the training length above which a model has learnt the task (chance is 1/values)


@dataclass(frozen=True)
class Config:
    """Model, the two tasks, their budgets and the evaluation lengths."""

    d: int
    layers: int  # GAU layers
    s: int
    seeds: tuple[int, ...]
    # recall
    pairs: int
    keys: int
    values: int
    queries: int
    span: int  # training length
    spans: tuple[int, ...]  # evaluation lengths
    recall_steps: int
    recall_lr: float
    eval_sequences: int
    # text
    ctx: int  # training length
    long: int  # evaluation length (a multiple of ctx)
    text_steps: int
    text_lr: float
    eval_windows: int
    batch: int
    norms: tuple[str, ...] = NORMS
    corpus_file: str | None = None
    seed: int = 0

    def __post_init__(self) -> None:
        if not self.seeds or len(set(self.seeds)) != len(self.seeds):
            raise ValueError(f"seeds must be distinct and at least one; got {self.seeds!r}")
        if self.span not in self.spans or list(self.spans) != sorted(set(self.spans)):
            raise ValueError(f"spans must be increasing and include the training span {self.span}; got {self.spans!r}")
        if self.spans[0] < self.pairs + self.queries:
            raise ValueError(f"every span must hold the {self.pairs} bindings and {self.queries} queries")
        if self.long < self.ctx or self.long % self.ctx:
            raise ValueError(f"long ({self.long}) must be a multiple of ctx ({self.ctx})")
        if not set(self.norms) <= set(NORMS) or not self.norms:
            raise ValueError(f"norms must be among {', '.join(NORMS)}; got {self.norms!r}")


CONFIGS: dict[str, Config] = {
    "smoke": Config(d=32, layers=2, s=16, seeds=(0, 1), pairs=2, keys=8, values=4, queries=2, span=16,
                    spans=(8, 16, 32), recall_steps=8, recall_lr=1e-2, eval_sequences=32, ctx=16, long=32,
                    text_steps=8, text_lr=3e-3, eval_windows=4, batch=8),
    # 1200 recall steps: relu^2 GAU needs about 700 at 1e-2 to leave the plateau (softmax about 250)
    "cpu": Config(d=64, layers=2, s=32, seeds=(0, 1, 2), pairs=8, keys=64, values=16, queries=8, span=64,
                  spans=(16, 32, 64, 128, 256, 512), recall_steps=1200, recall_lr=1e-2, eval_sequences=512, ctx=64,
                  long=512, text_steps=600, text_lr=3e-3, eval_windows=32, batch=32),
    # sized from step times measured on an H100 (a step of these small models is bound by kernel launches, about
    # 4 ms per GAU layer); recall: relu^2 did not leave its plateau in 1200 steps at length 256, so length 128, 2000
    # steps; text trains at 512 tokens and is evaluated at 8x, 4096; three seeds (a paired t test over two has 1 df)
    "gpu": Config(d=256, layers=2, s=64, seeds=(0, 1, 2), pairs=16, keys=256, values=16, queries=16, span=128,
                  spans=(32, 64, 128, 256, 512, 1024), recall_steps=2000, recall_lr=1e-2, eval_sequences=128,
                  ctx=512, long=4096, text_steps=1200, text_lr=3e-3, eval_windows=32, batch=32,
                  corpus_file=PINNED_CORPUS_PATH),
}


def model_config(cfg: Config, norm: str, vocab: int) -> ModelConfig:
    """Post-norm GAU with RoPE; ctx is the longest evaluation length (RoPE needs no table)."""
    return ModelConfig(vocab=vocab, d=cfg.d, layers=cfg.layers, block="gau", residual="post", s=cfg.s,
                       gau_norm=norm, ctx=max(cfg.spans[-1], cfg.long))


def task_of(cfg: Config, span: int, layout: str = "spread") -> SpacedLookupTask:
    """The recall task at ``span`` tokens."""
    return SpacedLookupTask(cfg.pairs, keys=cfg.keys, values=cfg.values, queries=cfg.queries, span=span,
                            layout=layout)


@torch.no_grad()
def _evaluate(model: LanguageModel, x: torch.Tensor, y: torch.Tensor, device: torch.device) -> dict[str, Any]:
    """Query accuracy and loss, and per layer the mean mass and entropy of the query rows, in batches whose
    attention matrices hold at most 2^24 entries."""
    size = max(1, 2**24 // x.shape[1] ** 2)
    logits, rows = [], []
    for i in range(0, x.shape[0], size):
        xb, yb = x[i : i + size].to(device), y[i : i + size].to(device)
        logits.append(model.eval()(xb)[yb != IGNORE].cpu())
        rows.append(attention_rows(model, xb, yb != IGNORE))
    chosen, answers = torch.cat(logits), y[y != IGNORE]
    accuracy, loss = recall_metrics(chosen, answers)
    layers = range(len(rows[0]))
    return {"accuracy": accuracy, "loss": loss,
            "mass": [float(np.concatenate([r[i]["mass"] for r in rows]).mean()) for i in layers],
            "entropy": [float(np.concatenate([r[i]["entropy"] for r in rows]).mean()) for i in layers]}


@dataclass(frozen=True)
class RecallRun:
    """One model trained on recall: accuracy, loss and attention per evaluation (layout-span), where it diverged and
    its last training loss."""

    task: str
    norm: str
    seed: int
    evals: dict[str, dict[str, Any]]
    diverged_at: int | None
    final_train_loss: float


@dataclass(frozen=True)
class TextRun:
    """One model trained on text: loss per position with the full context and with the last ctx tokens only
    (positions ctx-1 .. long-1), and per layer the entropy and mass of the attention rows per position."""

    task: str
    norm: str
    seed: int
    diverged_at: int | None
    position_loss: list[float]
    truncated_loss: list[float]
    entropy: list[list[float]]
    mass: list[list[float]]


def _recall(cfg: Config, norm: str, seed: int, device: torch.device) -> RecallRun:
    task = task_of(cfg, cfg.span)
    model = LanguageModel(model_config(cfg, norm, task.vocab))
    log = train_lm(model, task.source(), TrainConfig(steps=cfg.recall_steps, batch=cfg.batch, lr=cfg.recall_lr,
                                                     warmup=max(1, cfg.recall_steps // 10), seed=run_seed(cfg, seed)),
                   task.length, device, progress=False)
    evals: dict[str, dict[str, Any]] = {}
    for layout in LAYOUTS:
        for span in cfg.spans:
            x, y = (torch.from_numpy(t) for t in task_of(cfg, span, layout).batch(
                cfg.eval_sequences, seed=cfg.seed + 2**31 + span))  # training batches draw other seeds
            evals[f"{layout}-{span}"] = _evaluate(model, x, y, device)
    return RecallRun("recall", norm, seed, evals, log.diverged_at, log.train_loss[-1] if log.train_loss else math.nan)


def _text(cfg: Config, norm: str, seed: int, device: torch.device) -> TextRun:
    corpus = corpus_of(cfg)
    model = LanguageModel(model_config(cfg, norm, 256))
    log = train_lm(model, corpus.train, TrainConfig(steps=cfg.text_steps, batch=cfg.batch, lr=cfg.text_lr,
                                                    warmup=max(1, cfg.text_steps // 20), seed=run_seed(cfg, seed)),
                   cfg.ctx, device, progress=False)
    full = position_loss(model, corpus.val, cfg.long, cfg.eval_windows, device)
    cut = truncated_context_loss(model, corpus.val, cfg.long, cfg.ctx, cfg.eval_windows, device)
    x = fixed_windows(corpus.val, cfg.long, min(8, cfg.eval_windows))[0].to(device)
    rows = attention_rows(model, x, torch.ones_like(x, dtype=torch.bool))
    n = x.shape[1]
    return TextRun("text", norm, seed, log.diverged_at, np.round(full, 5).tolist(),
                   np.round(cut, 5).tolist(),  # positions ctx-1 .. long-1
                   [np.round(r["entropy"].reshape(-1, n).mean(0), 4).tolist() for r in rows],
                   [np.round(r["mass"].reshape(-1, n).mean(0), 5).tolist() for r in rows])


def trials(cfg: Config) -> list[Trial]:
    """Every (task, normalisation, seed), seeded with run_seed(cfg, seed): a seed gives every normalisation the same
    initial draw and batches."""
    return [Trial(f"{task}.{norm}.seed{seed}", run_seed(cfg, seed), {"task": task, "norm": norm, "seed": seed})
            for task in ("recall", "text") for norm in cfg.norms for seed in cfg.seeds]


# the claims' own stakes in the gpu campaign's order (lower first): length transfer is cheap to decide on a GPU
CLAIM_PRIORITY = {key: 12 for key in ("relu2-length-recall", "relu2-length-text", "log-softmax-length-recall",
                                      "log-softmax-length-text", "log-scaling-beats-softmax-text",
                                      "log-scaling-beats-softmax")}


def claim_trials(cfg: Config) -> dict[str, list[str]]:
    """The trials each claim reads: a normalisation's recall runs tell whether it learnt the task (its claims are made
    only then) and its text runs give the cost of context; the log-scaled claims are judged against plain softmax."""
    def runs(*norms: str) -> list[str]:
        return [f"{task}.{norm}.seed{seed}" for seed in cfg.seeds for norm in norms if norm in cfg.norms
                for task in ("recall", "text")]

    relu, logs = runs("relu2_ns"), runs("softmax_log512", "softmax")
    return {"relu2-length-recall": relu, "relu2-length-text": relu, "log-softmax-length-recall": logs,
            "log-softmax-length-text": logs, "log-scaling-beats-softmax-text": logs, "log-scaling-beats-softmax": logs}


def run_trial(cfg: Config, trial: Trial, device: torch.device) -> RecallRun | TextRun:
    """One model trained and evaluated: recall (accuracy and attention per span and layout) or text (loss per
    position with full and truncated context, attention per position)."""
    p = trial.params
    return (_recall if p["task"] == "recall" else _text)(cfg, p["norm"], p["seed"], device)


def assemble(cfg: Config, results: list[RecallRun | TextRun], device_type: str) -> dict[str, Any]:
    """The runs in trial order, with what the chapter needs of the setting."""
    return {"device_type": device_type, "corpus": corpus_of(cfg).summary(), "chance": 1 / cfg.values,
            "train_span": cfg.span, "spans": list(cfg.spans), "ctx": cfg.ctx, "long": cfg.long,
            "runs": [fields_of(r) for r in results]}


def _runs(data: dict[str, Any], task: str, norm: str) -> list[dict[str, Any]]:
    return [r for r in data["runs"] if r["task"] == task and r["norm"] == norm]


def recall_curve(data: dict[str, Any], norm: str, layout: str = "spread", metric: str = "accuracy"
                 ) -> dict[str, list[float]]:
    """Mean and SE over seeds of a recall metric (accuracy, loss, or mass/entropy of layer i as 'entropy:i')
    at each evaluation span."""
    name, _, layer = metric.partition(":")
    mean, se = [], []
    for span in data["spans"]:
        vals = [r["evals"][f"{layout}-{span}"][name] for r in _runs(data, "recall", norm)]
        vals = [v[int(layer)] if layer else v for v in vals]
        m, e = mean_se(vals)
        mean.append(m)
        se.append(e)
    return {"span": list(data["spans"]), "mean": mean, "se": se}


def text_extrapolation(data: dict[str, Any], norm: str, ctx: int, lo: int, hi: int) -> tuple[float, float]:
    """Mean and SE over seeds of the loss at positions [lo, hi) with the full context minus from the last ctx tokens
    only (nats/byte): positive when the context beyond the training length hurts."""
    diffs = []
    for r in _runs(data, "text", norm):
        full = np.asarray(r["position_loss"])[lo:hi]
        cut = np.asarray(r["truncated_loss"])[lo - (ctx - 1) : hi - (ctx - 1)]
        diffs.append(float((full - cut).mean()))
    return mean_se(diffs)


def summary(data: dict[str, Any]) -> dict[str, Any]:
    """Per normalisation: recall accuracy at the training span, its shortest and longest evaluation span (both
    layouts), the attention entropy at the query rows, and the text model's cost of context beyond training."""
    spans, train_span, ctx, long = data["spans"], data["train_span"], data["ctx"], data["long"]
    norms = [n for n in NORMS if _runs(data, "recall", n)]
    out: dict[str, Any] = {"spans": spans, "train_span": train_span, "ctx": ctx, "long": long, "norms": norms}
    i_train = spans.index(train_span)
    for norm in norms:
        row: dict[str, Any] = {}
        for layout in LAYOUTS:
            acc = recall_curve(data, norm, layout)
            row[layout] = acc
            row[f"{layout}_drop_long"] = _paired_drop(data, norm, layout, train_span, spans[-1])
            row[f"{layout}_drop_short"] = _paired_drop(data, norm, layout, train_span, spans[0])
        ent = [recall_curve(data, norm, "near", f"entropy:{i}") for i in range(_layers(data))]
        row["entropy_near"] = ent
        row["entropy_change"] = [_paired_change(data, norm, "near", "entropy", i, train_span, spans[-1])
                                 for i in range(_layers(data))]
        row["accuracy_train"] = row["spread"]["mean"][i_train]
        row["learned"] = row["accuracy_train"] >= LEARNED
        row["text_cost"] = text_extrapolation(data, norm, ctx, long // 2, long)
        row["text_in"] = mean_se(float(np.mean(r["position_loss"][ctx // 2 : ctx])) for r in _runs(data, "text", norm))
        out[norm] = row
    return out


def _layers(data: dict[str, Any]) -> int:
    r = next(r for r in data["runs"] if r["task"] == "recall")
    return len(next(iter(r["evals"].values()))["entropy"])


def _paired_drop(data: dict[str, Any], norm: str, layout: str, at: int, to: int) -> tuple[float, float]:
    """Mean and SE over seeds of accuracy at span ``at`` minus accuracy at span ``to``."""
    return mean_se(r["evals"][f"{layout}-{at}"]["accuracy"] - r["evals"][f"{layout}-{to}"]["accuracy"]
                   for r in _runs(data, "recall", norm))


def _paired_change(data: dict[str, Any], norm: str, layout: str, metric: str, layer: int, at: int, to: int
                   ) -> tuple[float, float]:
    """Mean and SE over seeds of a layer's metric at span ``to`` minus at span ``at``."""
    return mean_se(r["evals"][f"{layout}-{to}"][metric][layer] - r["evals"][f"{layout}-{at}"][metric][layer]
                   for r in _runs(data, "recall", norm))


def recall_drops(data: dict[str, Any], norm: str, layout: str, at: int, to: int) -> dict[int, float]:
    """Per seed: accuracy at span ``at`` minus accuracy at span ``to``."""
    return {r["seed"]: r["evals"][f"{layout}-{at}"]["accuracy"] - r["evals"][f"{layout}-{to}"]["accuracy"]
            for r in _runs(data, "recall", norm)}


def text_costs(data: dict[str, Any], norm: str, ctx: int, lo: int, hi: int) -> dict[int, float]:
    """Per seed: the loss at positions [lo, hi) with the full context minus from the last ctx tokens only."""
    out = {}
    for r in _runs(data, "text", norm):
        full = np.asarray(r["position_loss"])[lo:hi]
        cut = np.asarray(r["truncated_loss"])[lo - (ctx - 1) : hi - (ctx - 1)]
        out[r["seed"]] = float((full - cut).mean())
    return out


def over_seeds(values: dict[int, float]) -> Estimate:
    """The mean over seeds of per-seed values, with its SE and n - 1 df."""
    return mean_estimate([values[k] for k in sorted(values)], "seeds")


def paired_over_seeds(a: dict[int, float], b: dict[int, float]) -> Estimate:
    """The mean over the seeds both have of a - b (a seed gives every normalisation the same draw and batches)."""
    seeds = sorted(set(a) & set(b))
    return paired_estimate([a[k] for k in seeds], [b[k] for k in seeds])


SOURCE_9019 = "Su 2022, kexue.fm/archives/9019 (softmax suits attention better)"
SOURCE_8934 = "Su 2022, kexue.fm/archives/8934, readers' comments (a GAU trained at one length degrades at another)"


def claims(data: dict[str, Any], label: str) -> list[Claim]:
    """Length-transfer claims of relu^2 and log-n-scaled softmax GAU, from the recall and the text runs; every
    difference per seed (paired where two normalisations are compared), judged by its Student-t interval."""
    s = summary(data)
    n, top, ctx, long = s["train_span"], s["spans"][-1], s["ctx"], s["long"]
    out: list[Claim] = []
    acc_what, loss_what = "the per-seed accuracy drop", "the per-seed loss difference"

    def learned(norm: str) -> bool:  # transfer is measured only for a model that learnt the task at its length
        return norm in s["norms"] and bool(s[norm]["learned"])

    drops = {m: recall_drops(data, m, "spread", n, top) for m in s["norms"]}
    costs = {m: text_costs(data, m, ctx, long // 2, long) for m in s["norms"]}
    if learned("relu2_ns"):
        out.append(Claim(
            "relu2-length-recall",
            f"relu²/(ns) GAU trained at length {n} recalls worse at {top // n}x that length: accuracy at {n} minus "
            f"at {top} is above 0 ({label})", SOURCE_8934, predicted=0.0, kind="above", unit="accuracy (fraction)",
            **estimate_fields(over_seeds(drops["relu2_ns"]), acc_what, sided="one")))
    if "relu2_ns" in s["norms"]:
        out.append(Claim(
            "relu2-length-text",
            f"On text, context beyond the training length {ctx} raises relu²/(ns) GAU's loss at positions "
            f"{long // 2}-{long - 1} above the loss from the last {ctx} tokens ({label})", SOURCE_8934,
            predicted=0.0, kind="above", unit="nats/byte",
            **estimate_fields(over_seeds(costs["relu2_ns"]), loss_what, sided="one")))
    plain = "softmax" in s["norms"]
    if learned("softmax_log512"):
        out.append(Claim(
            "log-softmax-length-recall",
            f"softmax · log₅₁₂ n GAU trained at length {n} recalls as well at {top} as at {n}: the drop is at most 0, "
            f"against plain softmax's {over_seeds(drops['softmax']).value:.2f} ({label})" if plain else
            f"softmax · log₅₁₂ n GAU trained at length {n} recalls as well at {top} as at {n} ({label})",
            SOURCE_9019, predicted=0.0, kind="upper_bound", unit="accuracy drop (fraction)",
            effect=over_seeds(drops["softmax"]).value if plain and learned("softmax") else None,
            **estimate_fields(over_seeds(drops["softmax_log512"]), acc_what, sided="one")))
    if "softmax_log512" in s["norms"]:
        out.append(Claim(
            "log-softmax-length-text",
            f"On text, context beyond the training length {ctx} does not raise softmax · log₅₁₂ n GAU's loss at "
            f"positions {long // 2}-{long - 1} above the loss from the last {ctx} tokens"
            + (f", against plain softmax's {over_seeds(costs['softmax']).value:+.2f} nats/byte ({label})" if plain
               else f" ({label})"),
            SOURCE_9019, predicted=0.0, kind="upper_bound", unit="nats/byte",
            effect=over_seeds(costs["softmax"]).value if plain else None,
            **estimate_fields(over_seeds(costs["softmax_log512"]), loss_what, sided="one")))
    if plain and "softmax_log512" in s["norms"]:
        out.append(Claim(
            "log-scaling-beats-softmax-text",
            f"On text, scaling the logits by log₅₁₂ n makes context beyond the training length {ctx} cost softmax "
            f"GAU less: plain softmax's cost minus the scaled one's, paired by seed, is above 0 ({label})",
            SOURCE_9019, predicted=0.0, kind="above", unit="nats/byte",
            **estimate_fields(paired_over_seeds(costs["softmax"], costs["softmax_log512"]),
                              "the paired loss difference", sided="one")))
    if learned("softmax") and learned("softmax_log512"):
        out.append(Claim(
            "log-scaling-beats-softmax",
            f"Scaling the logits by log₅₁₂ n makes softmax GAU lose less recall accuracy from length {n} to "
            f"{top}: plain softmax's drop minus the scaled one's, paired by seed, is above 0 ({label})",
            SOURCE_9019, predicted=0.0, kind="above", unit="accuracy (fraction)",
            **estimate_fields(paired_over_seeds(drops["softmax"], drops["softmax_log512"]),
                              "the paired accuracy difference", sided="one")))
    return out


def trial_plan(cfg: Config, trial: Trial) -> list[Workload]:
    """The model a trial trains and its evaluations."""
    norm = trial.params["norm"]
    if trial.params["task"] == "recall":
        evals = 2 * sum(-(-cfg.eval_sequences // cfg.batch) * s for s in cfg.spans) // cfg.span
        return [Workload(f"recall, {NORM_LABELS[norm]}", model_config(cfg, norm, task_of(cfg, cfg.span).vocab),
                         cfg.batch, cfg.span, cfg.recall_steps, evals)]
    evals = -(-cfg.eval_windows * (cfg.long // cfg.ctx + cfg.long - cfg.ctx + 1) // cfg.batch)  # full + truncated
    return [Workload(f"text, {NORM_LABELS[norm]}", model_config(cfg, norm, 256), cfg.batch, cfg.ctx, cfg.text_steps,
                     evals)]
