"""Benchmark of the alpha* calculator: speed (one CPU core) and accuracy against mpmath.

Run: .venv/bin/python benchmarks/softmax_scale.py [--out results/benchmarks/softmax-scale.json]

* time for 10,000 values of n in one vectorised call (median of repeats): normal and cosine (d = 128);
* largest relative error against a 40-digit mpmath reference over n in [2, 1e12] and d in [3, 65536];
* the same grid evaluated with every floating-point warning turned into an error.
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_var] = "1"  # one core, as the targets are stated

import argparse
import json
import platform
import time
import warnings
from pathlib import Path

import numpy as np

from analysis.core.results import device_name
from analysis.theory import softmax_scale as sc

N_VALUES = np.logspace(np.log10(2), 12, 10_000)
REF_N = (2, 3, 10, 100, 1e3, 1e4, 1e6, 1e9, 1e12)
REF_D = (3, 4, 5, 8, 16, 64, 79, 80, 81, 128, 1024, 8192, 65536)


def median_time(fn, repeats: int) -> float:
    """Median wall time of ``fn()`` over ``repeats`` runs, after one warm-up."""
    fn()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return float(np.median(times))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="results/benchmarks/softmax-scale.json")
    parser.add_argument("--repeats", type=int, default=7)
    args = parser.parse_args()

    t_normal = median_time(lambda: sc.alpha_star_normal(N_VALUES), args.repeats)
    t_cosine = median_time(lambda: sc.alpha_star_cosine(N_VALUES, 128), args.repeats)

    normal_err = max(abs(float(sc.alpha_star_normal(n)) / sc.alpha_star_normal_reference(n) - 1)
                     for n in np.logspace(np.log10(2), 12, 200))
    cosine_err, worst_at = 0.0, None
    for d in REF_D:
        got = sc.alpha_star_cosine(np.array(REF_N), d)
        for n, g in zip(REF_N, got):
            err = abs(float(g) / sc.alpha_star_cosine_reference(n, d) - 1)
            if err > cosine_err:
                cosine_err, worst_at = err, (n, d)

    grid_n = np.logspace(np.log10(2), 12, 300)[:, None]
    grid_d = np.unique(np.geomspace(3, 65536, 60).round())[None, :]
    with warnings.catch_warnings(), np.errstate(all="raise"):
        warnings.simplefilter("error")
        full = sc.alpha_star_cosine(grid_n, grid_d)
        sc.alpha_star_normal(grid_n)
    finite = bool(np.all(np.isfinite(full)) and np.all(full > 0))

    report = {
        "device": device_name(), "python": platform.python_version(), "numpy": np.__version__,
        "n_values": int(N_VALUES.size), "repeats": args.repeats,
        "normal_seconds": t_normal, "cosine_d128_seconds": t_cosine,
        "normal_target_seconds": 0.050, "cosine_target_seconds": 0.500,
        "normal_max_rel_error_vs_mpmath": normal_err, "cosine_max_rel_error_vs_mpmath": cosine_err,
        "cosine_worst_at": worst_at, "accuracy_target": 1e-9,
        "warning_free_grid": f"{grid_n.size} x {grid_d.size} (n in [2, 1e12], d in [3, 65536])", "grid_all_finite": finite,
        "date": time.strftime("%Y-%m-%d"),
    }
    path = Path(args.out)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(report, indent=1))
    print(f"normal: {1000 * t_normal:.1f} ms for {N_VALUES.size} n (target 50 ms); "
          f"cosine d=128: {1000 * t_cosine:.1f} ms (target 500 ms)")
    print(f"max relative error vs mpmath: normal {normal_err:.2e}, cosine {cosine_err:.2e} at (n, d) = {worst_at} (target 1e-9)")
    print(f"no warning on a {report['warning_free_grid']} grid; all finite: {finite}")
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
