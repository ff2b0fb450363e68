"""The GPU training step's efficiency targets: the models a fast step is held to, from this book's own architectures.

The machinery that times them and records the result is :mod:`analysis.compute.steptimes`; the FLASH chapter shows
the record (:func:`analysis.compute.steptimes.efficiency_table`).
"""

from __future__ import annotations

import dataclasses

from analysis.compute.plan import cached_step_cost, hand_measured_h100_steps
from analysis.compute.steptimes import PEAK_FRACTION_TARGET, SPEEDUP_TARGET, Target
from analysis.core.size import validate_size
from analysis.studies.gau_trained.experiments.gau_quality import ARCH_LABELS, CONFIGS, model_config


def efficiency_targets(size: str = "gpu") -> tuple[Target, ...]:
    """The targets at ``size``. At gpu scale: Transformer++, FLASH-Quad (post-norm) and FLASH at about 101 M
    parameters (gau-quality's architectures at d = 1,024, 8 Transformer or 16 GAU layers) at 1,024 tokens, batch 32,
    each to reach :data:`PEAK_FRACTION_TARGET` of the peak; and the 8-layer GAU of d = 256 at 512 tokens, at the
    batch it was timed with (32) and at 256, each to reach :data:`SPEEDUP_TARGET` times that timing's tokens/s. At
    smoke scale the same architectures, tiny, so that every code path runs on a CPU (not a measurement)."""
    size = validate_size(size)
    if size == "cpu":
        raise ValueError("scale must be gpu (the targets) or smoke (their code path on a CPU); got 'cpu'")
    reference = hand_measured_h100_steps()[0]  # the 8-layer GAU of d = 256, 36 ms a step on the eager path
    small = dataclasses.replace(reference.model, gau_backend="auto")  # the backend the experiments now train on
    if size == "gpu":
        base, ctx, batch, big_batch = dataclasses.replace(CONFIGS["gpu"], d=1024, layers=8, heads=16), 1024, 32, 256
        small_ctx, small_batch = reference.ctx, reference.batch
    else:
        base, ctx, batch, big_batch = CONFIGS["smoke"], 32, 2, 4
        small, small_ctx, small_batch = dataclasses.replace(small, d=32, s=16, layers=2, ctx=32), 32, 2
    out = []
    for arch in ("transformer", "flash-quad-post", "flash"):
        model = model_config(base, arch, ctx=ctx)
        params = cached_step_cost(model, batch, ctx)[0]
        count = f"{params / 1e6:.0f} M" if params >= 1e6 else f"{params:,}"
        out.append(Target(f"{arch}-100m", f"{ARCH_LABELS[arch]}, {count} parameters, n = {ctx:,}, batch {batch}",
                          model, batch, ctx, min_peak_fraction=PEAK_FRACTION_TARGET))
    for name, b in (("gau-d256", small_batch), ("gau-d256-big-batch", big_batch)):  # names as at gpu scale
        out.append(Target(name, f"GAU, {small.layers} layers, d = {small.d}, n = {small_ctx}, batch {b}", small, b,
                          small_ctx, reference=reference, min_speedup=SPEEDUP_TARGET))
    return tuple(out)
