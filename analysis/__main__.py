"""Command line: ``python -m analysis SUBCOMMAND ...`` (``--help`` lists them).

Invalid arguments exit with status 2 and one line on stderr, without a traceback.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, NoReturn

EXIT_USAGE = 2


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
    from analysis.theory.entropy import cross_entropy_loss, entropy_bits, peak_probability, spread_prediction_entropy

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
    from analysis.experiments.softmax_scale_mc import finite_sample_alpha
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

    from analysis.experiments.gau_init import measure
    from analysis.theory.gau_init import gau_output_rms
    from analysis.train import pick_device

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


# --- run -------------------------------------------------------------------------------


def cmd_run(args: argparse.Namespace) -> None:
    """Run an experiment at a scale and record it under results/."""
    from analysis.experiments import run_and_record

    record, path = run_and_record(args.experiment, args.scale, directory=args.out, progress=not args.quiet,
                                  corpus_file=args.corpus, seed=args.seed)
    corpus = record.data.get("corpus") or record.data.get("real", {}).get("corpus", {})
    if corpus:
        print(f"corpus: {corpus.get('description')} sha256 {corpus.get('sha256')}")
    print(f"recorded {path}")
    print(record.describe())


def cmd_list(args: argparse.Namespace) -> None:
    """List the experiments and the records present for each scale."""
    from analysis.experiments import EXPERIMENTS
    from analysis.results import find_record

    for name, module in sorted(EXPERIMENTS.items()):
        have = []
        for scale in ("smoke", "cpu", "gpu"):
            rec = find_record(name, scale)
            have.append(f"{scale}: {'recorded ' + str(rec.provenance.get('date', ''))[:10] if rec else 'none'}")
        print(f"{name}  ({'; '.join(have)})  {(module.__doc__ or '').strip().splitlines()[0]}")


# --- build helpers ---------------------------------------------------------------------


def cmd_scale_default(args: argparse.Namespace) -> None:
    """Print the scale this machine defaults to (gpu with CUDA, else cpu)."""
    from analysis.scale import default_scale

    print(default_scale())


CELL_TIMEOUT_S = {"smoke": 120, "cpu": 1800, "gpu": 1800}


def cmd_book_config(args: argparse.Namespace) -> None:
    """Write _config.yml with the per-cell timeout of ``--scale`` to OUT/_config.SCALE.yml; print its path."""
    import yaml

    root = Path(__file__).resolve().parent.parent
    config = yaml.safe_load((root / "_config.yml").read_text())
    config.setdefault("execute", {})["timeout"] = CELL_TIMEOUT_S[args.scale]
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    path = out / f"_config.{args.scale}.yml"
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    print(path)


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


def build_parser() -> argparse.ArgumentParser:
    """The parser with every subcommand."""
    from analysis.scale import SCALES

    parser = _Parser(prog="python -m analysis", description="Compute and measure the numbers of the book.")
    sub = parser.add_subparsers(dest="command", metavar="SUBCOMMAND", parser_class=_Parser)

    p = sub.add_parser("entropy", help="entropy and cross-entropy of a prediction with p on the correct class")
    p.add_argument("--classes", "-K", type=_bounded_int("--classes", 1, 2**53), required=True, help="number of classes K >= 1")
    p.add_argument("--p", type=_probability("--p"), required=True, help="probability of the correct class, in (0, 1]")
    p.add_argument("--json", action="store_true", help="print a JSON object")
    p.set_defaults(func=cmd_entropy)

    p = sub.add_parser("scale", help="the softmax scale alpha* that maximises the softmax gradient, for n scores")
    p.add_argument("--scores", choices=("normal", "cosine"), required=True, help="N(0,1) scores or cosines in d dimensions")
    p.add_argument("--n", type=_bounded_float("--n", 2, 1e15), required=True, help="number of scores (keys), 2 to 1e15")
    p.add_argument("--d", type=_bounded_int("--d", 3, 2**20), help="dimension of q and k, >= 3 (required for cosine)")
    p.add_argument("--reps", type=_bounded_int("--reps", 16, 100_000), default=256, help="rows for the finite-sample value")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--json", action="store_true", help="print a JSON object")
    p.set_defaults(func=cmd_scale)

    from analysis.theory.gau_init import ACTIVATIONS

    p = sub.add_parser("moments", help="mean and second moment of an activation of a standard normal")
    p.add_argument("activation", choices=sorted(ACTIVATIONS))
    p.add_argument("--sigma", type=_bounded_float("--sigma", 1e-6, 1e6), default=1.0, help="scale of the normal input")
    p.add_argument("--json", action="store_true", help="print a JSON object")
    p.set_defaults(func=cmd_moments)

    p = sub.add_parser("gau-magnitude", help="predicted and measured RMS of a GAU layer's output at initialisation")
    p.add_argument("--d", type=_bounded_int("--d", 1, 65536), required=True)
    p.add_argument("--e", type=_bounded_int("--e", 1, 262144), required=True)
    p.add_argument("--s", type=_bounded_int("--s", 1, 65536), required=True)
    p.add_argument("--n", type=_bounded_int("--n", 1, 65536), required=True)
    p.add_argument("--init", choices=("lecun", "std0.02"), default="lecun")
    p.add_argument("--seeds", type=_bounded_int("--seeds", 1, 1000), default=4)
    p.add_argument("--json", action="store_true", help="print a JSON object")
    p.set_defaults(func=cmd_gau_magnitude)

    p = sub.add_parser("run", help="run an experiment and record it under results/")
    p.add_argument("experiment", help="experiment name (see 'list')")
    p.add_argument("--scale", choices=SCALES, required=True)
    p.add_argument("--corpus", metavar="FILE", help="train on this UTF-8 text file instead of the standard-library corpus")
    p.add_argument("--seed", type=int)
    p.add_argument("--out", metavar="DIR", help="results folder (default: the repository's results/)")
    p.add_argument("--quiet", action="store_true", help="no progress bars")
    p.set_defaults(func=cmd_run)

    p = sub.add_parser("list", help="list the experiments and their recorded results")
    p.set_defaults(func=cmd_list)

    p = sub.add_parser("scale-default", help="print this machine's default scale")
    p.set_defaults(func=cmd_scale_default)

    p = sub.add_parser("book-config", help="write the book's config for a scale (used by scripts/book.sh)")
    p.add_argument("--scale", choices=SCALES, required=True)
    p.add_argument("--out", required=True, metavar="DIR")
    p.set_defaults(func=cmd_book_config)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point; returns the exit status."""
    from analysis.data import CorpusError
    from analysis.results import ResultsFileError

    parser = build_parser()
    try:
        args = parser.parse_args(argv)
        if not getattr(args, "func", None):
            parser.print_help()
            return EXIT_USAGE
        args.func(args)
    except UsageError as err:
        print(f"error: {err}", file=sys.stderr)
        return EXIT_USAGE
    except (ValueError, CorpusError, ResultsFileError) as err:
        print(f"error: {err}", file=sys.stderr)
        return EXIT_USAGE
    return 0


if __name__ == "__main__":
    sys.exit(main())
