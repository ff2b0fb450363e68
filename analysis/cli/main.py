"""Command line: ``python -m analysis SUBCOMMAND ...`` (``--help`` lists them).

Invalid input exits with status 2 and one line on stderr, without a traceback; any other error is a
bug and exits with status 1 and its traceback.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
import traceback
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, NoReturn

EXIT_USAGE = 2
EXIT_FAILURE = 1
STEP_COMPILE_MODES = ("auto", "eager", "default", "reduce-overhead", "max-autotune-no-cudagraphs")  # steptimes'


class UsageError(Exception):
    """Raised for invalid input; printed as one line, exit status 2."""


def _emit(args: argparse.Namespace, payload: dict[str, Any], lines: list[str]) -> None:
    if getattr(args, "json", False):
        print(json.dumps(payload, indent=1))
    else:
        print("\n".join(lines))


# --- entropy ---------------------------------------------------------------------------


def cmd_entropy(args: argparse.Namespace) -> None:
    """Entropy of the spread prediction and its cross-entropy loss, in nats and bits."""
    from analysis.theory.entropy import (
        cross_entropy_loss,
        entropy_bits,
        peak_probability,
        spread_prediction_entropy,
    )

    h = float(spread_prediction_entropy(args.p, args.classes))
    loss = float(cross_entropy_loss(args.p))
    payload = {
        "classes": args.classes,
        "p": args.p,
        "entropy_nats": h,
        "entropy_bits": float(entropy_bits(h)),
        "cross_entropy_nats": loss,
        "cross_entropy_bits": float(entropy_bits(loss)),
        "max_entropy_nats": math.log(args.classes),
        "peak_p": float(peak_probability(args.classes)),
    }
    _emit(
        args,
        payload,
        [
            f"K = {args.classes} classes, p(correct) = {args.p:g}, the rest spread evenly",
            f"entropy of the prediction: {h:.6g} nats = {payload['entropy_bits']:.6g} bits",
            f"cross-entropy loss -ln p:  {loss:.6g} nats = {payload['cross_entropy_bits']:.6g} bits",
            f"(this is the largest entropy any prediction with this p can have; the maximum over p is ln K = {math.log(args.classes):.6g} nats at p = 1/K)",
        ],
    )


# --- scale -----------------------------------------------------------------------------


def cmd_scale(args: argparse.Namespace) -> None:
    """Mean-field and finite-sample softmax scales for normal or cosine scores."""
    from analysis.studies.softmax_scale.experiments.softmax_scale_mc import finite_sample_alpha
    from analysis.theory import softmax_scale as sc

    if args.scores == "cosine" and args.d is None:
        raise UsageError("--d is required for --scores cosine (the dimension of q and k, >= 3)")
    d = args.d if args.scores == "cosine" else None
    mean_field = float(sc.alpha_star(args.scores, args.n, d))
    finite: dict[str, float] | None = None
    if args.n == int(args.n) and args.n <= 2**20:
        finite = finite_sample_alpha(args.scores, int(args.n), d, reps=args.reps, seed=args.seed)
    payload: dict[str, Any] = {
        "scores": args.scores,
        "n": args.n,
        "d": args.d,
        "alpha_mean_field": mean_field,
        "alpha_finite_sample": None if finite is None else finite["alpha"],
        "alpha_finite_sample_se": None if finite is None else finite["se"],
        "top_score_location": float(sc.top_score_location(args.scores, args.n, d)),
        "finite_sample_plateau": float(sc.finite_sample_plateau(args.scores, args.n, d)),
    }
    lines = [f"{args.scores} scores, n = {args.n:g}" + (f", d = {args.d}" if args.d is not None else "")]
    lines.append(f"mean-field alpha* (the source's criterion): {mean_field:.10g}")
    if args.scores == "normal" and args.d is not None:
        payload["logit_scale_mean_field"] = mean_field / math.sqrt(args.d)
        lines.append(f"  as a logit scale for d = {args.d}: alpha*/sqrt(d) = {payload['logit_scale_mean_field']:.6g}")
    if finite is None:
        lines.append("finite-sample alpha (typical row): not computed for n > 2**20 or non-integer n")
    else:
        lines.append(f"finite-sample alpha (maximiser of the typical row's objective, {args.reps} rows, seed {args.seed}): "
                     f"{finite['alpha']:.4g} ± {finite['se']:.2g}")
    lines.append(f"mean objective plateau for alpha >> b_n: h(b_n) = {payload['finite_sample_plateau']:.4g} "
                 f"(b_n = {payload['top_score_location']:.4g})")
    _emit(args, payload, lines)


# --- GAU at initialisation ---------------------------------------------------------------


def cmd_moments(args: argparse.Namespace) -> None:
    """mu = E[phi(eps)] and nu^2 = E[phi(eps)^2] for eps ~ N(0, 1)."""
    from analysis.theory.gau_init import activation_moments

    mean, second = activation_moments(args.activation, args.sigma)
    _emit(args, {"activation": args.activation, "sigma": args.sigma, "mean": mean, "second_moment": second},
          [f"{args.activation}(sigma eps), eps ~ N(0, 1), sigma = {args.sigma:g}",
           f"mean          mu   = {mean:.12g}", f"second moment nu^2 = {second:.12g}"])


def cmd_gau_magnitude(args: argparse.Namespace) -> None:
    """The source's and the corrected prediction of RMS(GAU(x)) at initialisation, and the measured value."""
    import numpy as np

    from analysis.studies.gau_init.experiments.gau_init import measure
    from analysis.theory.gau_init import gau_output_rms
    from analysis.core.runner import pick_device

    if args.s > args.e:
        raise UsageError(f"--s (key size {args.s}) must not exceed --e (expanded width {args.e})")
    pred = gau_output_rms(args.s, args.n, args.d, args.e, args.init)
    m = measure(args.d, args.e, args.s, args.n, args.init, args.seeds, pick_device())
    payload = {"d": args.d, "e": args.e, "s": args.s, "n": args.n, "init": args.init, "seeds": args.seeds,
               "predicted_source": pred.rms_source, "predicted_corrected": pred.rms_corrected,
               "measured_rms": m["rms"], "measured_std": m["rms_std"]}
    _emit(args, payload, [
        f"GAU d = {args.d}, e = {args.e}, s = {args.s}, n = {args.n}, {args.init} init, x ~ N(0, I), {args.seeds} seeds",
        f"source  s nu^6 / n      : {pred.rms_source:.4g}",
        f"corrected (this book)   : {pred.rms_corrected:.4g}",
        f"measured RMS            : {m['rms']:.4g} ± {m['rms_std']:.2g} (std over seeds)",
        f"measured / source       : {m['rms'] / pred.rms_source:.3g};  measured / corrected: {m['rms'] / pred.rms_corrected:.3g}",
    ] + ([] if np.isfinite(m["rms"]) else ["(non-finite output)"]))


# --- run, list, plan -------------------------------------------------------------------


def _experiment_or_usage(name: str) -> Any:
    from analysis.core.registry import get_experiment

    try:
        return get_experiment(name)
    except ValueError as err:
        raise UsageError(str(err)) from None


def cmd_run(args: argparse.Namespace) -> None:
    """Run an experiment at a scale and record it under results/ (or, with --all, every one lacking a current record)."""
    from analysis.core.registry import EXPERIMENTS, config_for, current_record
    from analysis.core.runner import run_and_record

    if args.all == (args.experiment is not None):
        raise UsageError("name one experiment, or give --all")
    names = sorted(EXPERIMENTS) if args.all else [args.experiment]
    for name in names:
        module = _experiment_or_usage(name)
        try:
            config_for(module, args.scale, corpus_file=args.corpus, seed=args.seed)
        except ValueError as err:
            raise UsageError(str(err)) from None
    log = None
    if args.all:
        from analysis.core.results import results_dir

        folder = Path(args.out) if args.out else results_dir()
        folder.mkdir(parents=True, exist_ok=True)
        log = (folder / f"run-all.{args.scale}.log").open("a")
    for i, name in enumerate(names, 1):
        if args.all:
            record, stale = current_record(name, args.scale, args.out)
            if record is not None and not stale:
                print(f"[{i}/{len(names)}] {name}: current record kept")
                continue
            print(f"[{i}/{len(names)}] {name}: running at {args.scale} scale", flush=True)
        record, path = run_and_record(name, args.scale, directory=args.out, progress=not args.quiet,
                                      corpus_file=args.corpus, seed=args.seed)
        corpus = record.data.get("corpus") or record.data.get("real", {}).get("corpus", {})
        if corpus:
            print(f"corpus: {corpus.get('description')} sha256 {corpus.get('sha256')}")
        print(f"recorded {path}")
        print(record.describe())
        if log is not None:
            log.write(f"{record.provenance.get('date')} {name} {args.scale} {record.provenance.get('wall_time_s')} s {path}\n")
            log.flush()


BENCHMARKS = {"flash": "flash-bench"}


def cmd_bench(args: argparse.Namespace) -> None:
    """Run a benchmark at a scale, record it under results/ like any experiment, and print its table (or JSON)."""
    from analysis.core.registry import get_experiment
    from analysis.core.runner import run_and_record

    name = BENCHMARKS[args.benchmark]
    record, path = run_and_record(name, args.scale, directory=args.out, progress=not args.json and not args.quiet)
    module = get_experiment(name)
    if args.json:
        print(json.dumps({"record": str(path), "summary": module.summary(record.data), "rows": record.data["rows"]},
                         indent=1, default=float))
        return
    print(f"recorded {path}")
    print(record.describe())
    print(module.table(record.data))


def _factor(text: str) -> int:
    """--factor: an integer >= 2 (a fractional width is a library call: analysis.models.widening.widen_lm(model, width))."""
    try:
        value = int(text)
    except ValueError:
        raise UsageError(f"--factor must be an integer >= 2 (widening by a fraction needs the library's widen_lm and "
                         f"a model with learned positions); got {text!r}") from None
    if value < 2:
        raise UsageError(f"--factor must be an integer >= 2; got {value}")
    return value


def cmd_widen(args: argparse.Namespace) -> None:
    """Widen a saved model k-fold so that it computes the same function; print the largest logit difference."""
    from analysis.models.widening import WideningError, widen_checkpoint

    try:
        result = widen_checkpoint(args.checkpoint, _factor(args.factor), args.out, rope=args.rope)
    except WideningError as err:
        raise UsageError(str(err)) from None
    _emit(args, result, [
        (f"widened {result['arch']} d = {result['d']} -> {result['wide_d']} (x{result['factor']}, {result['dtype']}), "
        f"written to {result['output']}"),
        (f"largest logit difference on the probe batch: {result['max_abs_logit_difference']:.3g} "
        f"({result['relative_logit_difference']:.3g} of the largest logit); exact by construction: {result['exact']}"),
    ])


def cmd_list(args: argparse.Namespace) -> None:
    """List the experiments and, per scale, whether a record exists and whether it is current or stale."""
    from analysis.core.registry import EXPERIMENTS, current_record
    from analysis.core.size import SIZES

    for name, module in sorted(EXPERIMENTS.items()):
        print(f"{name}: {(module.__doc__ or '').strip().splitlines()[0]}")
        for size in SIZES:
            record, stale = current_record(name, size)
            if record is None:
                state = "none"
            else:
                state = f"recorded {str(record.provenance.get('date', ''))[:10]}, " + (
                    "STALE: " + "; ".join(stale) if stale else "current")
            print(f"  {size:5s} {state}")


def cmd_steptimes(args: argparse.Namespace) -> None:
    """Time a few training steps of every model a scale trains, each saved as it is timed (on a GPU), and fit the step
    model; or, with --targets, time the models the fast step is held to and say whether each target is met."""
    from analysis.compute.campaign import parse_budget
    from analysis.core.runner import pick_device
    from analysis.compute.plan import fit_step_model
    from analysis.compute.steptimes import measure, recorded_targets, save, save_targets, targets_path, time_targets

    for name in args.only or []:
        _experiment_or_usage(name)
    try:
        budget = parse_budget(args.budget) if args.budget is not None else math.inf
    except ValueError as err:
        raise UsageError(str(err)) from None
    device = pick_device()
    keep = device.type == "cuda" or args.out
    saved: list[Path] = []  # each model's timing is saved as it comes (a command cut short keeps it): the last path
    if args.targets:
        if args.only or args.budget is not None or args.compile_mode != "auto":
            raise UsageError("--targets takes none of --only, --budget, --compile-mode (it times its own models, "
                             "compiled and eager)")
        if args.scale != "smoke" and device.type != "cuda":
            raise UsageError(f"--targets at {args.scale} scale needs a CUDA GPU; --scale smoke runs their code path "
                             "on this CPU")
        from analysis.studies.flash.targets import efficiency_targets

        targets = efficiency_targets(args.scale)
        earlier = recorded_targets(args.scale, targets, args.out) if keep else {}
        if earlier and len(earlier) == len(targets):
            print(f"every target is recorded for this device: {targets_path(args.scale, args.out)} (remove it to "
                  "time them again)")
            return
        time_targets(targets, args.scale, device, args.repeats, progress=not args.quiet, skip=frozenset(earlier),
                     on_result=(lambda r: saved.append(save_targets(r, args.scale, targets, args.out, earlier))) if keep
                     else None)
        if saved:
            print(f"recorded {saved[-1]}" + (f" (beside {len(earlier)} target(s) recorded before)" if earlier else ""))
        return
    timings = measure(args.scale, device, budget, args.only, args.repeats, progress=not args.quiet,
                      compile_mode=args.compile_mode,
                      on_timing=(lambda t: saved.append(save(t, args.scale, args.out))) if keep else None)
    if not timings:
        raise UsageError("no model of that scale and selection trains")
    if saved:
        print(f"recorded {saved[-1]}")
    if len(timings) >= 2:
        fit = fit_step_model(tuple(t.measured_step("here") for t in timings))
        print(f"fitted: {1e3 * fit.layer_s:.2f} ms per layer and step + FLOPs at {fit.flops_per_s / 1e12:.3g} "
              f"TFLOP/s; every timed model within {100 * fit.worst_error:.0f}%")


def cmd_lease(args: argparse.Namespace) -> None:
    """A lent GPU session's command: prepare what travels (here), run it (there), take its results in (here)."""
    from analysis.compute import lease
    from analysis.compute.campaign import parse_budget

    if args.action != "run" and (args.limit is not None or args.out is not None or args.started_at is not None
                                 or args.lease_dir is not None):
        raise UsageError("--limit, --started-at, --out and --lease-dir apply only to 'lease run'")
    if args.action != "rehearse" and args.kill_after is not None:
        raise UsageError("--kill-after applies only to 'lease rehearse'")
    if args.action in ("prepare", "unpack", "rehearse") and (args.only or args.scale != "gpu"):
        raise UsageError(f"--only and --scale do not apply to 'lease {args.action}'")
    if args.action not in ("prepare", "plan") and args.device != "h100":
        raise UsageError("--device applies only to 'lease prepare' and 'lease plan' (a run sizes by its own GPU)")
    if args.action != "unpack" and args.archives:
        raise UsageError(f"'lease {args.action}' takes no archive paths")
    if args.action == "prepare":
        _lease_prepare(args.device)
        return
    if args.action == "plan":
        for name in args.only or []:
            _experiment_or_usage(name)
        _lease_plan(args)
        return
    if args.action == "unpack":
        _lease_unpack(args.archives)
        return
    if args.action == "rehearse":
        from analysis.compute.rehearse import rehearse

        result = rehearse(kill_after_s=args.kill_after)
        print("\n".join(result.lines()))
        if not result.ok:
            raise RuntimeError("the rehearsal lost a finished trial (above)")
        return
    if args.out is None:
        raise UsageError("'lease run' needs --out DIR (on the GPU machine: --out \"$OUT\")")
    try:
        limit = parse_budget(args.limit or "9m")
    except ValueError as err:
        raise UsageError(f"--limit: {err}") from None
    try:
        lease.lease_deadline(limit, args.started_at)
    except ValueError as err:
        raise UsageError(f"--{err}") from None  # the checks name the argument: limit or started-at
    for name in args.only or []:
        _experiment_or_usage(name)
    summary = lease.run_lease(limit, args.out, args.scale, args.only, started_at=args.started_at,
                              lease_dir=args.lease_dir or lease.LEASE_DIR, targets=_targets(args.scale))
    if any(s.returncode not in (0, None) for s in summary.steps):
        raise RuntimeError("a lease step failed (its output is above); the files it left are packed")


def _targets(size: str) -> tuple[Any, ...]:
    """The efficiency targets a lease at ``size`` times (at gpu scale only: below it their code path is a test's)."""
    from analysis.studies.flash.targets import efficiency_targets

    return efficiency_targets(size) if size == "gpu" else ()


def _lease_prepare(device: str) -> None:
    """Fill .lease/: the queue sized for ``device``, the corpus, the wheels, the source stamp; say what travels."""
    from analysis.compute import lease
    from analysis.compute.queue import build_queue, lease_table, save_queue, split_leases
    from analysis.tasks.data import ensure_pinned_corpus
    from analysis.core.results import tree_dirty

    queue = build_queue("gpu", device)
    path = save_queue(queue, lease.LEASE_DIR / lease.QUEUE, "gpu", device)
    xz = lease.compress_corpus(ensure_pinned_corpus())
    wheels = lease.download_wheels()
    stamp = lease.LEASE_DIR / lease.SOURCE_STAMP
    lease.write_source_stamp(stamp)
    files = [path, xz, *wheels, stamp]
    for f in files:
        print(f"{f.relative_to(lease.REPO_ROOT)}: {f.stat().st_size:,} bytes")
    size = sum(f.stat().st_size for f in files)
    travel = lease.travelling_bytes()
    print("\n".join(lease_table(split_leases(queue, tag=device), device, shown=2)))
    print(f".lease/ holds {size / 2**20:.1f} MiB to carry; with the checkout, {travel / 2**20:.1f} MiB travel "
          f"(at most {lease.MAX_TRAVEL_BYTES / 2**20:.0f}). On the GPU machine, from the repository root, with the "
          "command's limit in seconds: bash scripts/lease.sh 540 (carry .lease). Then here: "
          "python -m analysis lease unpack <the returned lease-results*.tar.gz>")
    if travel > lease.MAX_TRAVEL_BYTES:
        print(f"warning: {travel / 2**20:.1f} MiB is more than a device command takes along")
    if tree_dirty():
        print("warning: the checkout has uncommitted changes: records made from it will say git_dirty; "
              "commit before the lease")


def _lease_plan(args: argparse.Namespace) -> None:
    """Print the steps a run would take here, then the queue split into lent commands with what each decides."""
    from analysis.compute import lease
    from analysis.compute.queue import COMMAND_S, build_queue, lease_table, split_leases

    for step in lease.plan_lease(args.scale, args.only, tag=args.device, queue=lease.LEASE_DIR / lease.QUEUE,
                                 targets=_targets(args.scale)):
        cap = f" (at most {step.cap_s:.0f} s)" if step.cap_s else ""
        print(f"{step.name}: python -m analysis {' '.join(step.argv)}{cap}: {step.why}")
    if args.scale == "cpu":
        return
    leases = split_leases(build_queue(args.scale, args.device, args.only), tag=args.device)
    print(f"The queue in lent commands of {COMMAND_S:.0f} s on one {args.device.upper()} (estimates):")
    print("\n".join(lease_table(leases, args.device, shown=args.leases, size=args.scale)))


def _lease_unpack(archives: list[str]) -> None:
    """Take archives into results/, then assemble every gpu record whose trials are all stored."""
    from analysis.compute import lease

    if not archives:
        raise UsageError("'lease unpack' needs the path of at least one lease-results archive")
    missing = [a for a in archives if not Path(a).is_file()]
    if missing:
        raise UsageError(f"no such archive: {missing[0]}")
    try:
        report = lease.unpack(archives)
    except lease.LeaseError as err:
        raise UsageError(str(err)) from None
    for label, names in (("added", report.added), ("replaced", report.replaced)):
        for name in names:
            print(f"{label}: results/{name}")
    print(f"{len(report.added)} added, {len(report.replaced)} replaced, {len(report.same)} already here")
    for line in lease.assemble_taken_in(report):
        print(line)


def cmd_corpus(args: argparse.Namespace) -> None:
    """Build the pinned-sources corpus (when missing), check its hash, and say how often each run reads it."""
    from analysis.tasks.data import PINNED_CORPUS_PATH, PINNED_SOURCES, ensure_pinned_corpus, file_corpus
    from analysis.core.registry import EXPERIMENTS, config_for
    from analysis.compute.plan import text_passes

    try:
        path = ensure_pinned_corpus()
    except ValueError as err:
        raise UsageError(str(err)) from None
    corpus = file_corpus(path)
    print(f"{path}: {path.stat().st_size:,} bytes, SHA-256 {corpus.sha256[:16]}... of its splits; "
          f"{corpus.train.size:,} training bytes; the .py sources of "
          + ", ".join(f"{n} {v}" for n, v in PINNED_SOURCES))
    for name in sorted(EXPERIMENTS):
        cfg = config_for(EXPERIMENTS[name], args.scale)
        if getattr(cfg, "corpus_file", None) == PINNED_CORPUS_PATH:
            passes = text_passes(name, args.scale, corpus.train.size)
            print(f"  {name} ({args.scale}): at most {passes:.2g} passes over the training text per model")


def cmd_plan(args: argparse.Namespace) -> None:
    """Estimate every experiment's cost at a scale; build and step each model once (a dry run)."""
    from analysis.core.registry import EXPERIMENTS
    from analysis.compute.plan import COMPILE_PRIOR, gpu_basis, gpu_steps_basis, h100_step_model, plan_experiment, plan_table
    from analysis.training.train import COMPILE_MIN_STEPS

    names = [args.experiment] if args.experiment else sorted(EXPERIMENTS)
    for name in names:
        _experiment_or_usage(name)
    estimates = []
    for name in names:
        est = plan_experiment(name, args.scale, execute=not args.no_step)
        estimates.append(est)
        if not args.json:
            print(f"{name}: built and stepped {len(est.stepped)} model(s)", file=sys.stderr)
    if args.json:
        print(json.dumps([{"experiment": e.experiment, "scale": e.scale, "parameters": e.parameters, "flops": e.flops,
                           "h100_minutes": e.h100_minutes, "utilisation": e.utilisation,
                           "peak_memory_gb": e.peak_memory_gb, "fits_80gb": e.fits, "stepped": e.stepped}
                          for e in estimates], indent=1))
        return
    fit = h100_step_model()
    compiling = gpu_basis("h100").compile_fit
    print(f"Estimated cost at {args.scale} scale. H100 minutes come from {gpu_steps_basis('h100')}: "
          f"{1e3 * fit.layer_s:.1f} ms per layer and step plus the FLOPs at {fit.flops_per_s / 1e12:.0f} TFLOP/s "
          f"(fitted; within {100 * fit.worst_error:.0f}% of each measured step), a measured model by its own step. "
          + (f"A compiled run (runs of {COMPILE_MIN_STEPS} steps or more) adds {compiling[0]:.0f} s + "
             f"{compiling[1]:.2f} s per layer of compiling (fitted to the measured ones). " if compiling else
             f"Compiling (runs of {COMPILE_MIN_STEPS} steps or more train compiled) is not yet timed: each compiled "
             f"run is charged an assumed {COMPILE_PRIOR[0]:.0f} s + {COMPILE_PRIOR[1]:g} s per layer. ")
          + "Memory = 16 bytes per parameter + activations saved for backward. Estimates, not measurements.\n")
    print(plan_table(estimates))


def cmd_campaign(args: argparse.Namespace) -> None:
    """Run the missing trials of a scale in priority order within a budget (or, with --status, say what is left)."""
    from analysis.compute.campaign import campaign_plans, never_fits, parse_budget, report_lines, run_campaign, status_lines

    for name in args.only or []:
        _experiment_or_usage(name)
    try:
        budget = parse_budget(args.budget) if args.budget is not None else None
    except ValueError as err:
        raise UsageError(str(err)) from None
    if args.deadline is not None:
        if budget is not None:
            raise UsageError("--deadline and --budget are two ways to say one thing: give one")
        budget = args.deadline - time.time()
        if not budget > 0:
            raise UsageError(f"--deadline must be in the future; it passed {-budget:.0f} s ago")
    if args.queue is not None:
        if args.only or args.status or args.executor != "inline" or args.refresh_stale:
            raise UsageError("--queue runs its own trials in this process: it takes no --only, --status, "
                             "--executor or --refresh-stale")
        from analysis.compute.queue import load_queue, run_queued
        from analysis.compute.lease import repack_from_env

        try:
            prepared = load_queue(args.queue)
        except ValueError as err:
            raise UsageError(str(err)) from None
        if prepared.scale != args.scale:
            raise UsageError(f"--queue was prepared for the {prepared.scale} scale, not {args.scale}")
        try:
            report = run_queued(prepared.trials, args.scale, budget, args.out, prepared.margin,
                                after_trial=repack_from_env, progress=not args.quiet)
        except ValueError as err:  # a queue prepared from other code than this checkout's
            raise UsageError(str(err)) from None
        print("\n".join(report_lines(report, args.scale, None, args.out, statuses=False)))
        return
    if args.address and args.executor != "ray":
        raise UsageError("--address applies only to --executor ray")
    if args.executor == "inline" and args.workers not in (None, 1):
        raise UsageError("--executor inline runs one trial at a time: use --executor local or ray for --workers")
    if args.per_gpu != 1 and args.executor != "local":
        raise UsageError("--per-gpu applies only to --executor local")
    if args.trials and not args.status:
        raise UsageError("--trials applies only to --status")
    if args.estimate_on and not args.status:
        raise UsageError("--estimate-on applies only to --status (a campaign times its trials on its own device)")
    if args.status:
        plans = campaign_plans(args.scale, args.only, args.out, args.refresh_stale, args.estimate_on)
        print("\n".join(status_lines(plans, args.scale, args.estimate_on, trials=args.trials)))
        if budget is not None:
            for line in never_fits(plans, budget):
                print(f"never fits a budget of {args.budget}: {line}")
        return
    if args.executor == "ray":
        try:
            import ray  # noqa: F401
        except ImportError:
            raise UsageError("--executor ray needs Ray: pip install -e .[ray]") from None
    from analysis.compute.lease import repack_from_env

    report, _ = run_campaign(args.scale, budget, args.only, args.executor, args.workers, args.threads, args.address,
                             args.out, args.refresh_stale, progress=not args.quiet, per_gpu=args.per_gpu,
                             keep_going=not args.stop_on_failure, after_trial=repack_from_env)
    print("\n".join(report_lines(report, args.scale, args.only, args.out)))
    if report.failed:
        raise RuntimeError(f"{len(report.failed)} trial(s) failed; the finished ones are stored")


# --- parser ----------------------------------------------------------------------------


def _probability(name: str) -> Callable[[str], float]:
    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise UsageError(f"{name} must be a probability in (0, 1]; got {text!r}") from None
        if not (0 < value <= 1):
            raise UsageError(f"{name} must be a probability in (0, 1]; got {text!r}")
        return value

    return parse


def _bounded_float(name: str, lo: float, hi: float) -> Callable[[str], float]:
    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            value = math.nan
        if not (lo <= value <= hi):
            raise UsageError(f"{name} must be a number in [{lo:g}, {hi:g}]; got {text!r}")
        return value

    return parse


def _bounded_int(name: str, lo: int, hi: int) -> Callable[[str], int]:
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise UsageError(f"{name} must be an integer in [{lo}, {hi}]; got {text!r}") from None
        if not (lo <= value <= hi):
            raise UsageError(f"{name} must be an integer in [{lo}, {hi}]; got {text!r}")
        return value

    return parse


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:  # one line, exit 2
        raise UsageError(f"{self.prog}: {message}")


# --- check ------------------------------------------------------------------------------


def cmd_check(args: argparse.Namespace) -> int:
    """Causal, padding, batch, decoding and length-law checks of an attention layer, decoder or Hugging Face model
    named as package.module:factory."""
    from analysis.models.check import CheckInputError, check_module, load_target

    output: int | str | None = args.output
    if isinstance(output, str) and output.lstrip("-").isdigit():
        output = int(output)  # an index into a tuple, else a key or attribute name
    try:
        module = load_target(args.target)
        report = check_module(module, args.kind, target=args.target, d=args.d, vocab=args.vocab,
                              lengths=args.lengths, mask=args.mask, mask_arg=args.mask_arg, checks=args.checks,
                              seed=args.seed, modes=args.modes, device=args.device, autocast=args.autocast,
                              output=output)
    except CheckInputError as err:
        raise UsageError(str(err)) from None
    except ValueError as err:  # the library's own input checks speak for the arguments
        raise UsageError(str(err)) from None
    if args.json:
        print(json.dumps(report.to_json(), indent=1, allow_nan=False))  # to_json gives None for nan and inf
    else:
        print("\n".join(report.lines()))
    return 0 if report.passed else EXIT_FAILURE


def build_parser() -> argparse.ArgumentParser:
    """The parser with every subcommand."""
    from analysis.core.size import SIZES

    parser = _Parser(prog="python -m analysis", description="Compute and measure the numbers of the book.")
    sub = parser.add_subparsers(dest="command", metavar="SUBCOMMAND", parser_class=_Parser)

    p = sub.add_parser("entropy", help="entropy and cross-entropy of a prediction with p on the correct class")
    p.add_argument("--classes", "-K", type=_bounded_int("--classes", 1, 2**53), required=True, help="number of classes K >= 1")
    p.add_argument("--p", type=_probability("--p"), required=True, help="probability of the correct class, in (0, 1]")
    p.add_argument("--json", action="store_true", help="print a JSON object")
    p.set_defaults(func=cmd_entropy, calculator=True)

    p = sub.add_parser("scale", help="the softmax scale alpha* that maximises the softmax gradient, for n scores")
    p.add_argument("--scores", choices=("normal", "cosine"), required=True, help="N(0,1) scores or cosines in d dimensions")
    p.add_argument("--n", type=_bounded_float("--n", 2, 1e15), required=True, help="number of scores (keys), 2 to 1e15")
    p.add_argument("--d", type=_bounded_int("--d", 3, 2**20), help="dimension of q and k, >= 3 (required for cosine)")
    p.add_argument("--reps", type=_bounded_int("--reps", 16, 100_000), default=256, help="rows for the finite-sample value")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--json", action="store_true", help="print a JSON object")
    p.set_defaults(func=cmd_scale, calculator=True)

    from analysis.theory.gau_init import ACTIVATIONS

    p = sub.add_parser("moments", help="mean and second moment of an activation of a standard normal")
    p.add_argument("activation", choices=sorted(ACTIVATIONS))
    p.add_argument("--sigma", type=_bounded_float("--sigma", 1e-6, 1e6), default=1.0, help="scale of the normal input")
    p.add_argument("--json", action="store_true", help="print a JSON object")
    p.set_defaults(func=cmd_moments, calculator=True)

    p = sub.add_parser("gau-magnitude", help="predicted and measured RMS of a GAU layer's output at initialisation")
    p.add_argument("--d", type=_bounded_int("--d", 1, 65536), required=True)
    p.add_argument("--e", type=_bounded_int("--e", 1, 262144), required=True)
    p.add_argument("--s", type=_bounded_int("--s", 1, 65536), required=True)
    p.add_argument("--n", type=_bounded_int("--n", 1, 65536), required=True)
    p.add_argument("--init", choices=("lecun", "std0.02"), default="lecun")
    p.add_argument("--seeds", type=_bounded_int("--seeds", 1, 1000), default=4)
    p.add_argument("--json", action="store_true", help="print a JSON object")
    p.set_defaults(func=cmd_gau_magnitude, calculator=True)

    p = sub.add_parser("run", help="run an experiment (or --all) and record it under results/")
    p.add_argument("experiment", nargs="?", help="experiment name (see 'list')")
    p.add_argument("--all", action="store_true", help="every experiment without a current record at this scale; resumable")
    p.add_argument("--scale", choices=SIZES, required=True)
    p.add_argument("--corpus", metavar="FILE", help="train on this UTF-8 text file instead of the standard-library corpus")
    p.add_argument("--seed", type=_bounded_int("--seed", 0, 2**31 - 1))
    p.add_argument("--out", metavar="DIR", help="results folder (default: the repository's results/)")
    p.add_argument("--quiet", action="store_true", help="no progress bars")
    p.set_defaults(func=cmd_run)

    p = sub.add_parser("bench", help="run a speed and memory benchmark, record it under results/, print its table")
    p.add_argument("benchmark", choices=sorted(BENCHMARKS))
    p.add_argument("--scale", choices=SIZES, default="cpu")
    p.add_argument("--out", metavar="DIR", help="results folder (default: the repository's results/)")
    p.add_argument("--json", action="store_true", help="print the summary and rows as JSON")
    p.add_argument("--quiet", action="store_true", help="no progress lines")
    p.set_defaults(func=cmd_bench)

    p = sub.add_parser("widen", help="widen a saved model k-fold losslessly and print the largest logit difference")
    p.add_argument("checkpoint", help="a model saved by analysis.models.widening.save_checkpoint (BERT or LanguageModel)")
    p.add_argument("--factor", required=True, help="integer k >= 2")
    p.add_argument("--out", required=True, help="path of the widened checkpoint (must not exist)")
    p.add_argument("--rope", choices=("place", "pairs", "local"), default="place",
                   help="RoPE: place each pair at its frequency (exact, default), or repeat pairs (approximate)")
    p.add_argument("--json", action="store_true", help="print a JSON object")
    p.set_defaults(func=cmd_widen)

    p = sub.add_parser("campaign", help="run the missing trials of a scale in priority order within a time budget")
    p.add_argument("--scale", choices=SIZES, required=True)
    p.add_argument("--budget", metavar="TIME", help="start no trial expected to end after this (90s, 9m, 1.5h)")
    p.add_argument("--only", nargs="+", metavar="EXP", help="these experiments only")
    p.add_argument("--executor", choices=("inline", "local", "ray"), default="inline",
                   help="inline (this process), local (worker processes, one per GPU on CUDA) or ray")
    p.add_argument("--workers", type=_bounded_int("--workers", 1, 4096), help="trials side by side")
    p.add_argument("--per-gpu", type=_bounded_int("--per-gpu", 1, 64), default=1,
                   help="with --executor local on GPUs: worker processes sharing each GPU (default 1)")
    p.add_argument("--threads", type=_bounded_int("--threads", 1, 1024),
                   help="torch threads per trial (default: the cores shared out among the workers)")
    p.add_argument("--address", help="an existing Ray cluster's address (with --executor ray)")
    p.add_argument("--refresh-stale", action="store_true", help="also re-run trials stored by older code")
    p.add_argument("--stop-on-failure", action="store_true",
                   help="stop at a failed trial (default: skip the rest of its experiment and run the others)")
    p.add_argument("--status", action="store_true", help="print what is done and left, with expected times; run nothing")
    p.add_argument("--trials", action="store_true", help="with --status: a line per missing trial, with its expected time")
    p.add_argument("--estimate-on", choices=("cpu", "cuda"),
                   help="with --status: expected times on a device of this type rather than this machine's")
    p.add_argument("--deadline", type=float, metavar="EPOCH",
                   help="start no trial expected to end after this wall-clock time (seconds since 1970; a lease "
                        "passes the end of its command's limit)")
    p.add_argument("--queue", metavar="FILE", help="run this prepared queue's trials in its order (lease prepare "
                                                    "writes .lease/queue.json), with the estimates it carries")
    p.add_argument("--out", metavar="DIR", help="results folder (default: the repository's results/)")
    p.add_argument("--quiet", action="store_true", help="no line per finished trial")
    p.set_defaults(func=cmd_campaign)

    from analysis.models.check import AUTOCASTS, CHECKS, DEVICES, KINDS, MASKS, MAX_LENGTH, MAX_VOCAB, MAX_WIDTH, MODES

    p = sub.add_parser("check", help="check an attention layer, decoder or Hugging Face model for causal leaks, "
                                     "padding and batch dependence, cache decoding and length-dependent scaling "
                                     "(exit 1 when a check fails)")
    p.add_argument("target", help="package.module:factory (a callable returning an nn.Module) or package.module:obj")
    p.add_argument("--kind", choices=KINDS, default="layer",
                   help="layer: (batch, n, d) -> (batch, n, d); lm: token ids (batch, n) -> logits (batch, n, vocab); "
                        "hf: a Hugging Face causal or masked LM (attention_mask, position_ids, .logits, its config)")
    p.add_argument("--d", type=_bounded_int("--d", 1, MAX_WIDTH),
                   help="the layer's width (default: the first Linear's input width)")
    p.add_argument("--vocab", type=_bounded_int("--vocab", 1, MAX_VOCAB),
                   help="the decoder's vocabulary (default: the first Embedding's size; hf: its config's)")
    p.add_argument("--lengths", type=_bounded_int("--lengths", 1, MAX_LENGTH), nargs="+",
                   default=[32, 37, 45, 64, 77, 100, 128],
                   help="the prefix, then the longer total lengths (default: 32 37 45 64 77 100 128)")
    p.add_argument("--mask", choices=MASKS, default="none",
                   help="how the module takes padding: none; key-padding, a (batch, n) mask True at real tokens; "
                        "attention, an (n, n) mask True where query t may attend key j (not for --kind hf)")
    p.add_argument("--mask-arg", help="the forward's keyword for the mask (default: the first of mask, key_mask, "
                                      "attention_mask, attn_mask it takes)")
    p.add_argument("--output", metavar="INDEX|NAME",
                   help="which part of a tuple or dict output holds the outputs (default: the output itself; "
                        "hf: logits)")
    p.add_argument("--checks", nargs="+", choices=CHECKS,
                   help="which checks (default: causal, padding with --mask, batch; hf: also left-padding and, for "
                        "a causal model, decoding; a bidirectional layer takes --checks padding batch)")
    p.add_argument("--modes", nargs="+", choices=MODES, default=list(MODES),
                   help="eval, and train with every dropout off (float64; default both)")
    p.add_argument("--device", choices=DEVICES, default="cpu", help="where the module runs (default cpu)")
    p.add_argument("--autocast", choices=tuple(AUTOCASTS), default="none",
                   help="run the module's own-dtype checks under autocast to this dtype, with its threshold")
    p.add_argument("--seed", type=_bounded_int("--seed", 0, 2**62 - 1), default=0, help="seed of the random inputs")
    p.add_argument("--json", action="store_true", help="print the report as JSON")
    p.set_defaults(func=cmd_check)

    p = sub.add_parser("list", help="list the experiments and whether their records are current or stale")
    p.set_defaults(func=cmd_list)

    p = sub.add_parser("steptimes", help="time a few training steps of every model a scale trains (recorded on a GPU)")
    p.add_argument("--scale", choices=SIZES, default="gpu")
    p.add_argument("--only", nargs="+", metavar="EXP", help="these experiments only")
    p.add_argument("--budget", metavar="TIME", help="start no model after this much time (90s, 9m)")
    p.add_argument("--repeats", type=_bounded_int("--repeats", 1, 1000), default=5, help="timed steps per model")
    p.add_argument("--out", metavar="DIR", help="write the timings here (default on a GPU: results/benchmarks/)")
    p.add_argument("--compile-mode", choices=STEP_COMPILE_MODES, default="auto",
                   help="the trainer's compilation: auto (the experiments' own: CUDA graphs on a GPU) or another, "
                        "recorded beside it for comparison")
    p.add_argument("--targets", action="store_true",
                   help="time the models the fast step is held to (100 M parameters at 1,024 tokens: 35%% of the bf16 "
                        "peak; the d = 256 GAU: 10x its eager tokens/s), compiled and eager, and say if each is met")
    p.add_argument("--quiet", action="store_true", help="no line per model")
    p.set_defaults(func=cmd_steptimes)

    p = sub.add_parser("lease", help="a lent GPU session's one command: prepare what travels, run it there, "
                                     "unpack its results here")
    p.add_argument("action", choices=("prepare", "plan", "run", "unpack", "rehearse"),
                   help="prepare: fill .lease/ here; plan: the steps and the lent commands the queue takes; run: on "
                        "the GPU machine; unpack: take a run's archives into results/; rehearse: the whole path on "
                        "this CPU at smoke scale, killed at a random moment")
    p.add_argument("archives", nargs="*", help="with unpack: the lease-results*.tar.gz a run returned")
    p.add_argument("--limit", metavar="TIME",
                   help="with run: the limit the command runs under, counted from --started-at (default 9m)")
    p.add_argument("--started-at", type=float, metavar="EPOCH",
                   help="with run: when the command started (seconds since 1970; default: now)")
    p.add_argument("--out", metavar="DIR", help="with run: where the archives and summary go ($OUT)")
    p.add_argument("--lease-dir", metavar="DIR", help="with run: the prepared folder that travelled (default .lease)")
    p.add_argument("--device", default="h100", choices=("h100", "h200"),
                   help="with prepare or plan: the kind of GPU the queue is sized for (default h100)")
    p.add_argument("--leases", type=_bounded_int("--leases", 1, 1000), default=3,
                   help="with plan: how many lent commands to list one by one (default 3)")
    p.add_argument("--kill-after", type=float, metavar="SECONDS",
                   help="with rehearse: kill the run this long after it starts (default: a random moment)")
    p.add_argument("--scale", choices=SIZES, default="gpu")
    p.add_argument("--only", nargs="+", metavar="EXP", help="with plan or run: these experiments only")
    p.set_defaults(func=cmd_lease)

    p = sub.add_parser("corpus", help="build the pinned-sources corpus of the gpu runs; its hash and passes per run")
    p.add_argument("--scale", choices=SIZES, default="gpu")
    p.set_defaults(func=cmd_corpus)

    p = sub.add_parser("plan", help="estimate FLOPs, H100 minutes and memory of a scale; build and step every model")
    p.add_argument("experiment", nargs="?", help="one experiment (default: all)")
    p.add_argument("--scale", choices=SIZES, required=True)
    p.add_argument("--no-step", action="store_true", help="estimate only; do not build and step the models")
    p.add_argument("--json", action="store_true", help="print a JSON list")
    p.set_defaults(func=cmd_plan)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point; returns the exit status."""
    from analysis.tasks.data import CorpusError
    from analysis.core.results import ResultsFileError

    parser = build_parser()
    args: argparse.Namespace | None = None
    try:
        args = parser.parse_args(argv)
        if not getattr(args, "func", None):
            parser.print_help()
            return EXIT_USAGE
        status = args.func(args)
    except UsageError as err:
        print(f"error: {err}", file=sys.stderr)
        return EXIT_USAGE
    except (CorpusError, ResultsFileError) as err:  # a file the user named cannot be used
        print(f"error: {err}", file=sys.stderr)
        return EXIT_USAGE
    except ValueError as err:
        if not getattr(args, "calculator", False):
            traceback.print_exc()
            return EXIT_FAILURE
        # a calculator is a function of its arguments: the library's input checks speak for them
        print(f"error: {err}", file=sys.stderr)
        return EXIT_USAGE
    except Exception:  # anything else is a bug, not a usage error: show where it happened
        traceback.print_exc()
        return EXIT_FAILURE
    return int(status or 0)


if __name__ == "__main__":
    sys.exit(main())
