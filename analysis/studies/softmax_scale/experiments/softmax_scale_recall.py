"""Does the predicted softmax scale train best? Decided on a recall task, where the scale cannot be compensated.

Cosine attention has logits s cos(q, k): bounded by s whatever the weights learn, so a fixed s is a temperature the
model must live with (a dot product's scale is undone by W_q, W_k). One attention layer is trained on single-token
recall (:class:`analysis.tasks.recall.LookupTask`): a query must pick, among the ``pairs`` bindings in its row, the one
with its key. For each number of pairs n, a grid of s and several seeds (the same seeds at every s, so the
comparison across s is paired): the held-out loss and accuracy at the queries after a fixed budget. The s that
trains best, with a bootstrap over seeds, is set against the predictions for the mean row length m:

* the mean-field alpha*(m, k) of the softmax-scale chapter (cosine scores in the head width k);
* the finite-sample maximiser of the same objective (this book's correction of it);
* the source's fit 3.5 ln m (log-n scaling);
* QK-norm practice: unit q, k under the usual 1/sqrt(k) of normalised vectors of norm sqrt(k), i.e. s = sqrt(k)
  at every n.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt
import torch

from analysis.core.experiment import Workload, run_seed
from analysis.core.stats import Estimate, mean_estimate, paired_estimate
from analysis.core.trial import Trial
from analysis.core.typed import fields_of
from analysis.core.verify import Claim, estimate_fields
from analysis.models.lm import LanguageModel, ModelConfig
from analysis.studies.softmax_scale.experiments.softmax_scale_mc import finite_sample_alpha
from analysis.tasks.recall import LookupTask, recall_metrics
from analysis.theory import softmax_scale as sc
from analysis.training.train import TrainConfig, train_lm

NAME = "softmax-scale-recall"
PRIORITY = 40  # the gpu campaign's order (lower first; 50 by default): the order of the claims' stakes at gpu scale
DATA_VERSION = 1  # raised when the layout of the assembled data changes


@dataclass(frozen=True)
class Config:
    """Model, task, budget and the sweep."""

    d: int
    heads: int
    pairs: tuple[int, ...]
    keys: int
    values: int
    queries: int
    scales: tuple[float, ...]
    seeds: tuple[int, ...]
    steps: int
    batch: int
    lr: float
    eval_sequences: int
    checkpoints: int  # held-out evaluations along training (the last is the end)
    bootstrap: int
    finite_sample_reps: int
    seed: int = 0

    def __post_init__(self) -> None:
        if len(self.scales) < 2 or any(b <= a for a, b in zip(self.scales, self.scales[1:])):
            raise ValueError(f"scales must be at least two increasing values; got {self.scales!r}")
        ratios = np.diff(np.log(self.scales))
        if not np.allclose(ratios, ratios[0], rtol=1e-6):
            raise ValueError("scales must form a geometric grid (the best scale is refined in ln s)")

    @property
    def head_dim(self) -> int:
        """k = d / heads."""
        return self.d // self.heads


def _grid(top: int) -> tuple[float, ...]:
    """2, 2 sqrt 2, 4, ... up to 2**(top/2): a geometric grid in steps of sqrt(2)."""
    return tuple(float(2 ** (i / 2)) for i in range(2, top + 1))


CONFIGS: dict[str, Config] = {
    "smoke": Config(d=32, heads=1, pairs=(2, 8), keys=8, values=4, queries=2, scales=(4.0, 8.0, 16.0), seeds=(0, 1),
                    steps=6, batch=8, lr=3e-3, eval_sequences=32, checkpoints=2, bootstrap=20, finite_sample_reps=32),
    "cpu": Config(d=64, heads=1, pairs=(4, 16, 64), keys=64, values=16, queries=4, scales=_grid(12), seeds=(0, 1, 2, 3),
                  steps=400, batch=32, lr=3e-3, eval_sequences=512, checkpoints=8, bootstrap=400,
                  finite_sample_reps=2000),
    "gpu": Config(d=128, heads=1, pairs=(16, 64, 256), keys=1024, values=16, queries=8, scales=_grid(14),
                  seeds=(0, 1, 2), steps=2500, batch=128, lr=2e-3, eval_sequences=2048, checkpoints=10,
                  bootstrap=1000, finite_sample_reps=4000),
}


def task_of(cfg: Config, pairs: int) -> LookupTask:
    """The recall task with ``pairs`` bindings."""
    return LookupTask(pairs, keys=cfg.keys, values=cfg.values, queries=cfg.queries)


def model_config(cfg: Config, task: LookupTask, scale: float) -> ModelConfig:
    """One pre-norm Transformer layer with cosine attention at fixed scale ``scale`` and RoPE."""
    return ModelConfig(vocab=task.vocab, d=cfg.d, layers=1, heads=cfg.heads, block="transformer", residual="pre",
                       ctx=task.length, attn="cosine", cosine_scale=scale, positions="rope", ffn="gelu",
                       init="std0.02")


@dataclass(frozen=True)
class Run:
    """One trained model: its task and scale, held-out (step, loss, accuracy) along training, the last of them and
    where it diverged."""

    pairs: int
    scale: float
    seed: int
    curve: list[tuple[int, float, float]]
    loss: float
    accuracy: float
    diverged_at: int | None


@dataclass(frozen=True)
class Predictions:
    """Every rival prediction of the best scale for one number of pairs, at its mean row length."""

    row_length: float
    mean_field: float
    finite_sample: float
    finite_sample_se: float
    log_n: float
    qk_norm: float


def run_one(cfg: Config, task: LookupTask, scale: float, seed: int, held_out: tuple[torch.Tensor, torch.Tensor],
            device: torch.device) -> Run:
    """Train one model (torch seeded by the runner); its held-out query loss and accuracy along training."""
    model = LanguageModel(model_config(cfg, task, scale))
    x, y = (t.to(device) for t in held_out)
    every = max(1, cfg.steps // cfg.checkpoints)
    curve: list[tuple[int, float, float]] = []

    def on_step(step: int, m: torch.nn.Module) -> None:
        if step % every == 0 or step == cfg.steps:
            with torch.no_grad():
                m.eval()
                accuracy, loss = recall_metrics(m(x), y)
                m.train()
            if not curve or curve[-1][0] != step:
                curve.append((step, loss, accuracy))

    log = train_lm(model, task.source(), TrainConfig(steps=cfg.steps, batch=cfg.batch, lr=cfg.lr,
                                                     warmup=max(1, cfg.steps // 10), seed=run_seed(cfg, seed)),
                   task.length, device, on_step, progress=False)
    return Run(task.pairs, scale, seed, curve, curve[-1][1], curve[-1][2], log.diverged_at)


def predictions(cfg: Config, task: LookupTask) -> Predictions:
    """Every rival prediction of the best scale for this task's mean row length m."""
    m = task.mean_row_length()
    k = cfg.head_dim
    fs = finite_sample_alpha("cosine", max(2, round(m)), k, reps=cfg.finite_sample_reps, seed=cfg.seed)
    return Predictions(m, float(sc.alpha_star_cosine(m, k)), fs["alpha"], fs["se"], float(sc.source_fit_cosine(m)),
                       math.sqrt(k))


def trials(cfg: Config) -> list[Trial]:
    """Per number of pairs: its predictions, then one model per scale and seed, seeded with run_seed(cfg, seed) so
    that every scale gets the same initialisation and batches (a paired sweep)."""
    out = []
    for pairs in cfg.pairs:
        out.append(Trial(f"predict.pairs{pairs}", cfg.seed, {"kind": "predict", "pairs": pairs}))
        out += [Trial(f"train.pairs{pairs}.s{scale:.4g}.seed{seed}", run_seed(cfg, seed),
                      {"kind": "train", "pairs": pairs, "scale": scale, "seed": seed})
                for scale in cfg.scales for seed in cfg.seeds]
    return out


def run_trial(cfg: Config, trial: Trial, device: torch.device) -> Predictions | Run:
    """The predictions for one number of pairs, or one model trained on the held-out-evaluated task."""
    p = trial.params
    task = task_of(cfg, p["pairs"])
    if p["kind"] == "predict":
        return predictions(cfg, task)
    inputs, targets = task.batch(cfg.eval_sequences, seed=cfg.seed + 2**31)  # training batches draw other seeds
    return run_one(cfg, task, p["scale"], p["seed"], (torch.from_numpy(inputs), torch.from_numpy(targets)), device)


def assemble(cfg: Config, results: list[Predictions | Run], device_type: str) -> dict[str, Any]:
    """The runs in trial order, with the predictions for each number of pairs."""
    runs, preds = [], {}
    for trial, result in zip(trials(cfg), results):
        if trial.params["kind"] == "predict":
            preds[str(trial.params["pairs"])] = fields_of(result)
        else:
            runs.append(fields_of(result))
    return {"device_type": device_type, "head_dim": cfg.head_dim, "chance_loss": math.log(cfg.values),
            "runs": runs, "predictions": preds}


def loss_table(data: dict[str, Any], pairs: int, checkpoint: int = -1, metric: str = "loss"
               ) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]]:
    """(scales, values[seed, scale]) of the runs with ``pairs`` pairs at held-out evaluation ``checkpoint`` (default
    the end of training): the loss, or the error rate 1 - accuracy (``metric='error'``); a diverged run counts as
    the chance loss, or an error of 1 - 1/values."""
    if metric not in ("loss", "error"):
        raise ValueError(f"metric must be 'loss' or 'error'; got {metric!r}")
    rows = [r for r in data["runs"] if r["pairs"] == pairs]
    scales = np.array(sorted({r["scale"] for r in rows}))
    seeds = sorted({r["seed"] for r in rows})
    chance = data["chance_loss"] if metric == "loss" else 1.0 - math.exp(-data["chance_loss"])
    table = np.full((len(seeds), scales.size), chance)
    for r in rows:
        _, loss, accuracy = r["curve"][checkpoint]
        value = loss if metric == "loss" else 1.0 - accuracy
        if r["diverged_at"] is None and math.isfinite(value):
            table[seeds.index(r["seed"]), int(np.searchsorted(scales, r["scale"]))] = value
    return scales, table


def _refined_argmin(curve: npt.NDArray[np.float64], log_s: npt.NDArray[np.float64]) -> float:
    """Grid argmin refined by the parabola through the three points around it (in ln s); an end point stays."""
    i = int(np.argmin(curve))
    if 0 < i < curve.size - 1:
        y0, y1, y2 = curve[i - 1 : i + 2]
        denom = y0 - 2 * y1 + y2
        if denom > 0:
            return float(np.exp(log_s[i] + 0.5 * (log_s[1] - log_s[0]) * (y0 - y2) / denom))
    return float(np.exp(log_s[i]))


def seed_best_scales(data: dict[str, Any], pairs: int, checkpoint: int = -1, metric: str = "loss"
                     ) -> npt.NDArray[np.float64]:
    """ln of each seed's best scale: the argmin of that seed's held-out loss (or error) over the grid, refined by the
    parabola in ln s (:func:`loss_table`, :func:`_refined_argmin`); one value per seed, in seed order."""
    scales, table = loss_table(data, pairs, checkpoint, metric)
    log_s = np.log(scales)
    return np.log([_refined_argmin(row, log_s) for row in table])


def best_scale_estimate(data: dict[str, Any], pairs: int, checkpoint: int = -1, metric: str = "loss") -> Estimate:
    """The mean over seeds of ln(best scale) (:func:`seed_best_scales`), with its SE and m - 1 degrees of freedom:
    the seeds are the independent units (every scale of a seed shares its initialisation and batches)."""
    return mean_estimate(seed_best_scales(data, pairs, checkpoint, metric), "seeds")


def best_scale(data: dict[str, Any], pairs: int, checkpoint: int = -1, metric: str = "loss") -> dict[str, Any]:
    """The best scale (the geometric mean of the seeds' best scales) with the standard error of its log and its 95%
    Student-t interval over seeds (lo, hi); ``at_edge`` when it lies on an end of the grid."""
    scales, _ = loss_table(data, pairs, checkpoint, metric)
    est = best_scale_estimate(data, pairs, checkpoint, metric)
    half = est.half_width() if est.resolved else 0.0
    best = float(np.exp(est.value))
    return {"best": best, "log_se": est.se, "lo": float(np.exp(est.value - half)),
            "hi": float(np.exp(est.value + half)), "seeds": est.n,
            "at_edge": bool(best <= scales[0] * (1 + 1e-9) or best >= scales[-1] * (1 - 1e-9))}


def by_budget(data: dict[str, Any], pairs: int, metric: str = "loss") -> list[dict[str, Any]]:
    """The best scale at every held-out evaluation along training (step, best, lo, hi): how it moves with the budget."""
    steps = [c[0] for c in next(r for r in data["runs"] if r["pairs"] == pairs)["curve"]]
    return [{"step": step, **best_scale(data, pairs, checkpoint=i, metric=metric)}
            for i, step in enumerate(steps) if step > 0]


def accuracy_plateau(data: dict[str, Any], pairs: int, checkpoint: int = -1) -> dict[str, Any]:
    """Where the held-out accuracy is tied at its best: the grid scales at which every seed's error equals the least
    error of the table (:func:`loss_table`, ``metric='error'``), the longest run of consecutive such scales (the first
    of equal runs), its ends ``lo`` and ``hi``, its geometric centre, how many grid points it spans, the tied error
    and whether the run touches an end of the grid. Accuracy cannot rank the scales inside it: an argmin there only
    breaks a tie."""
    scales, table = loss_table(data, pairs, checkpoint, metric="error")
    least = float(table.min())
    tied = np.all(table == least, axis=0)
    runs, start = [], None
    for i, t in enumerate(list(tied) + [False]):
        if t and start is None:
            start = i
        elif not t and start is not None:
            runs.append((start, i - 1))
            start = None
    if not runs:  # no scale ties for every seed: the scale with the least mean error stands alone
        i = int(np.argmin(table.mean(axis=0)))
        runs = [(i, i)]
    first, last = max(runs, key=lambda r: r[1] - r[0])  # max keeps the first of equal runs
    lo, hi = float(scales[first]), float(scales[last])
    return {"lo": lo, "hi": hi, "centre": math.sqrt(lo * hi), "points": last - first + 1, "error": least,
            "tied_everywhere": bool(tied[first]), "at_edge": first == 0 or last == scales.size - 1,
            "grid_step": float(scales[1] / scales[0])}


def halfway_checkpoint(data: dict[str, Any], pairs: int) -> int:
    """The index of the held-out evaluation nearest half the training budget (the start of the drift window)."""
    steps = [c[0] for c in next(r for r in data["runs"] if r["pairs"] == pairs)["curve"]]
    return min(range(len(steps)), key=lambda i: abs(steps[i] - steps[-1] / 2))


def budget_drift(data: dict[str, Any], pairs: int, metric: str = "loss") -> Estimate:
    """How far ln(best scale) moved over the second half of training: per seed, its best at the end minus its best at
    the evaluation nearest half the budget (:func:`halfway_checkpoint`), paired over seeds."""
    half = halfway_checkpoint(data, pairs)
    return paired_estimate(seed_best_scales(data, pairs, -1, metric), seed_best_scales(data, pairs, half, metric))


def growth_estimate(data: dict[str, Any], low: int, high: int, checkpoint: int = -1) -> Estimate:
    """ln(best scale at ``high`` pairs / best at ``low`` pairs), paired over seeds (seed i's runs at both numbers of
    pairs share its seed)."""
    return paired_estimate(seed_best_scales(data, high, checkpoint), seed_best_scales(data, low, checkpoint))


def summary(data: dict[str, Any]) -> dict[str, Any]:
    """Per number of pairs: the best scale by loss with its Student-t interval over seeds beside every prediction, how
    far it moved over the second half of training and whether that is more than its interval (``moving``:
    :func:`still_moving`); the scales at which the accuracy is tied at its best (:func:`accuracy_plateau`: ends,
    centre, grid points, the tied error, and the least error at half the budget); and the growth from the fewest to
    the most pairs, measured (paired over seeds, with the standard error of its log) and predicted."""
    pairs = sorted(int(p) for p in data["predictions"])
    rows: dict[int, dict[str, Any]] = {}
    for p in pairs:
        plateau = accuracy_plateau(data, p)
        half = accuracy_plateau(data, p, halfway_checkpoint(data, p))
        rows[p] = {**best_scale(data, p), **data["predictions"][str(p)], "accuracy_lo": plateau["lo"],
                   "accuracy_hi": plateau["hi"], "accuracy_centre": plateau["centre"],
                   "accuracy_points": plateau["points"], "accuracy_error": plateau["error"],
                   "accuracy_tied": plateau["tied_everywhere"], "accuracy_half_points": half["points"],
                   "accuracy_half_error": half["error"], "accuracy_half_tied": half["tied_everywhere"]}
        drift = budget_drift(data, p, "loss")
        rows[p]["drift"] = math.expm1(drift.value)
        rows[p]["drift_log"] = drift.value
        rows[p]["moving"] = still_moving(drift, best_scale_estimate(data, p, metric="loss"))
    steps = [c[0] for c in data["runs"][0]["curve"]]
    lo, hi = rows[pairs[0]], rows[pairs[-1]]
    g = growth_estimate(data, pairs[0], pairs[-1])
    growth = {
        "measured": math.exp(g.value), "log_se": g.se, "dof": g.nu,
        **{name: hi[name] / lo[name] for name in ("mean_field", "finite_sample", "log_n", "qk_norm")},
        "from": pairs[0], "to": pairs[-1],
    }
    return {"rows": rows, "growth": growth, "pairs": pairs,
            "drift_from": steps[halfway_checkpoint(data, pairs[0])], "drift_to": steps[-1]}


def log_claim_fields(est: Estimate, predicted: float, what: str) -> dict[str, Any]:
    """A claim's measured value, SE, tolerance, basis and detectable difference in scale units from an estimate of
    ln(scale): the interval exp(v ± t SE) and the detectable ln-difference taken on the prediction's side."""
    fields = estimate_fields(est, what)
    value, half, det = est.value, est.half_width(), fields["detectable"]
    up = predicted > math.exp(value)

    def side(width: float) -> float:
        if not math.isfinite(width):
            return math.inf
        return math.exp(value + width) - math.exp(value) if up else math.exp(value) - math.exp(value - width)

    return {"measured": math.exp(value), "uncertainty": math.exp(value) * est.se,
            "tolerance": side(half) if math.isfinite(half) else 0.0,
            "tolerance_basis": fields["tolerance_basis"] + " (the interval of ln s, taken on the prediction's side)",
            "detectable": side(det)}


def still_moving(drift: Estimate, est: Estimate) -> bool:
    """Whether an optimum moved over the second half of training (``drift``, ln units) by more than the half-width of
    its own 95% interval (``est``): then it is no verdict yet."""
    return abs(drift.value) > (est.half_width() if est.resolved else 0.0)


def _drift_verdict(fields: dict[str, Any], drift: Estimate, est: Estimate, start: int, end: int
                   ) -> dict[str, Any]:
    """The fields with the budget drift stated; an optimum that moved over the second half of training by more than
    its own interval is no verdict: the claim is undecided (inconclusive), with that reason."""
    half = est.half_width() if est.resolved else 0.0
    moving = still_moving(drift, est)
    text = (f"; over steps {start} to {end} it moved {100 * math.expm1(drift.value):+.1f}% "
            f"(± {100 * math.expm1(drift.half_width()) if drift.resolved else math.inf:.1f}%), "
            f"{'more than' if moving else 'within'} its interval of ± {100 * math.expm1(half):.1f}%"
            f"{': still moving with the budget, no verdict' if moving else ''}")
    return {**fields, "tolerance_basis": fields["tolerance_basis"] + text,
            "undecided": "the optimum still moves with the training budget by more than its interval" if moving
            else ""}


def growth_and_drift(data: dict[str, Any]) -> tuple[Estimate, Estimate]:
    """The growth of the best scale (by loss) from the fewest to the most pairs (:func:`growth_estimate`, ln ratio),
    and how that ln ratio moved over the second half of training, paired over seeds."""
    pairs = sorted(int(p) for p in data["predictions"])  # as summary() orders them
    lo, hi = pairs[0], pairs[-1]
    drift = paired_estimate(seed_best_scales(data, hi) - seed_best_scales(data, lo),
                            seed_best_scales(data, hi, halfway_checkpoint(data, hi))
                            - seed_best_scales(data, lo, halfway_checkpoint(data, lo)))
    return growth_estimate(data, lo, hi), drift


def growth_drift_sentence(data: dict[str, Any]) -> str:
    """Whether the growth still moves: how much its ratio moved over the second half of training against the
    half-width of its own 95% interval (:func:`still_moving`), and whether the two optima it divides moved more than
    theirs, in words."""
    est, drift = growth_and_drift(data)
    half = est.half_width() if est.resolved else 0.0
    moved, bound = 100 * math.expm1(drift.value), 100 * math.expm1(half)
    digits = 1 if f"{abs(moved):.1f}" != f"{bound:.1f}" else 2  # never '4.0%, more than ± 4.0%'
    moving = still_moving(drift, est)
    pairs = sorted(int(p) for p in data["predictions"])
    ends = [still_moving(budget_drift(data, p, "loss"), best_scale_estimate(data, p, metric="loss"))
            for p in (pairs[0], pairs[-1])]
    ratio = (f"it moved {moved:+.{digits}f}% over the second half of training, "
             f"{'more than' if moving else 'within'} its interval of ± {bound:.{digits}f}%")
    if not moving:
        return f"The growth is settled at this budget: {ratio}."
    if not any(ends):
        # the optima's own drift is stated beside the loss verdicts: say only what the ratio adds
        return (f"The ratio of the two optima is known more tightly than either of them: {ratio}, so the growth is no "
                "verdict yet.")
    return f"The growth still moves with the budget: {ratio}, so it is no verdict yet."


def claims(data: dict[str, Any], label: str) -> list[Claim]:
    """Per number of pairs, the best scale by loss and by accuracy against the mean-field alpha*, each inconclusive
    while it still moves with the budget; and its growth with n against the rules."""
    s = summary(data)
    start, end = s["drift_from"], s["drift_to"]
    out = []
    for p in s["pairs"]:
        r = s["rows"][p]
        predicted = r["mean_field"]
        # the claim is about alpha* against the other rules: the nearest of them sets the difference it must resolve
        effect = min(abs(r[k] - predicted) for k in ("log_n", "qk_norm"))
        where = (f"{p} pairs, mean row length $m = {r['row_length']:.3g}$, $k = {data['head_dim']}$, {end} steps; "
                 f"{label}")
        est = best_scale_estimate(data, p, metric="loss")
        fields = _drift_verdict(log_claim_fields(est, predicted, "ln of the seeds' best scales by held-out loss"),
                                budget_drift(data, p, "loss"), est, start, end)
        out.append(Claim(
            key=f"recall-best-scale-{p}",
            statement=f"Cosine attention trains recall to the lowest held-out loss at the mean-field "
                      f"$\\alpha^*(m, k)$ ({where})",
            source="Su 2023 (kexue.fm/archives/9812), cosine scores",
            predicted=predicted, **fields, effect=effect,
            alternative=r["finite_sample"],
            alternative_note="the finite-sample maximiser of the same objective (this book's correction)",
        ))
        out.append(accuracy_claim(data, p, r, where))
    g = s["growth"]
    est, drift = growth_and_drift(data)
    fields = _drift_verdict(log_claim_fields(est, g["mean_field"], "the ln ratio of the best scales, paired over seeds"),
                            drift, est, start, end)
    out.append(Claim(
        key="recall-scale-growth",
        statement=f"The best cosine scale grows from {g['from']} to {g['to']} pairs as the mean-field $\\alpha^*$ does "
                  f"({label})",
        source="Su 2023 (kexue.fm/archives/9812): $\\alpha^*$ grows like $\\log n$",
        predicted=g["mean_field"], **fields, unit="ratio", effect=abs(g["log_n"] - g["mean_field"]),
        alternative=g["log_n"], alternative_note="the log-n rule $3.5 \\ln m$; QK-norm practice predicts 1",
    ))
    return out


def accuracy_claim(data: dict[str, Any], pairs: int, row: dict[str, Any], where: str) -> Claim:
    """The mean-field alpha* as the scale of the highest held-out accuracy, against the accuracy's plateau
    (:func:`accuracy_plateau`): every scale in it is a best scale, so the claim holds when alpha* lies inside it,
    and it cannot tell alpha* from the nearest rival rule (the log-n rule or sqrt(k)) that lies inside it too."""
    plateau = accuracy_plateau(data, pairs)
    predicted = row["mean_field"]
    centre = plateau["centre"]
    # every scale of the plateau is a best one: the tolerance reaches its end on the prediction's side
    reach = (plateau["hi"] - centre) if predicted >= centre else (centre - plateau["lo"])
    rival = min(("log_n", "qk_norm"), key=lambda k: abs(row[k] - predicted))
    names = {"log_n": "the log-n rule $3.5 \\ln m$", "qk_norm": "QK-norm practice $s = \\sqrt{k}$"}
    share = f"{100 * (1 - plateau['error']):.4g}%"
    tie = (f"every seed scores {share} of the held-out queries at each of the {plateau['points']} grid scales from "
           f"{plateau['lo']:.3g} to {plateau['hi']:.3g}" if plateau["tied_everywhere"] else
           f"no scale ties for every seed; the least mean error is at {plateau['lo']:.3g}")
    return Claim(
        key=f"recall-best-scale-accuracy-{pairs}",
        statement=f"Cosine attention trains recall to the highest held-out accuracy at the mean-field "
                  f"$\\alpha^*(m, k)$ ({where})",
        source="Su 2023 (kexue.fm/archives/9812), cosine scores",
        predicted=predicted, measured=centre, uncertainty=0.0, tolerance=reach,
        tolerance_basis=f"{tie}: accuracy cannot rank scales tied at its best, so each is a best scale; the measured "
                        f"value is the tie's geometric centre and the tolerance reaches its end on the prediction's "
                        f"side",
        alternative=row[rival], alternative_note=f"the nearest rival rule, {names[rival]}",
        detectable=reach, effect=abs(row[rival] - predicted),
    )


def trial_plan(cfg: Config, trial: Trial) -> list[Workload]:
    """A trained model with its held-out evaluations (the FLOPs do not depend on the scale); a prediction is
    sampling work too small to count."""
    p = trial.params
    if p["kind"] == "predict":
        return []
    task = task_of(cfg, p["pairs"])
    return [Workload(f"{p['pairs']} pairs", model_config(cfg, task, 1.0), cfg.batch, task.length, cfg.steps,
                     (cfg.checkpoints + 1) * -(-cfg.eval_sequences // cfg.batch))]
