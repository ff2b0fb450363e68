import math

import pytest
import sympy as sp
import torch
from torch.utils.flop_counter import FlopCounterMode

from analysis.studies.flash.experiments import flash_counts as fx
from analysis.models.gau import GAU, GAUConfig
from analysis.models.lm import Attention, FeedForward, ModelConfig
from analysis.theory import flash_counts as fc


@pytest.mark.parametrize("d, e, s, n, c", [(32, 64, 16, 64, 8), (48, 96, 32, 96, 16), (64, 160, 24, 128, 32)])
def test_closed_forms_match_the_modules(d, e, s, n, c):
    x = torch.randn(2, n, d)
    for chunk, pred in ((None, fc.gau_counts(d, e, s, n)), (c, fc.flash_counts(d, e, s, n, c))):
        layer = GAU(GAUConfig(d=d, e=e, s=s, causal=True, chunk=chunk))
        with FlopCounterMode(display=False) as counter:
            layer(x)
        assert counter.get_total_flops() == 2 * n * pred.flops
        assert sum(p.numel() for p in layer.parameters()) == pred.parameters


def test_transformer_counts_need_the_explicit_attention_path():
    # FlopCounterMode does not count the CPU kernel of scaled_dot_product_attention: the explicit path is counted
    d, n = 64, 96
    cfg = ModelConfig(d=d, heads=4, block="transformer", ffn="swiglu")
    att, ffn = Attention(cfg), FeedForward(cfg)
    pred = fc.transformer_counts(d, n)
    assert sum(p.numel() for m in (att, ffn) for p in m.parameters()) == pred.parameters
    x = torch.randn(1, n, d)
    att.track_softmax_gradient = True
    with FlopCounterMode(display=False) as counter:
        ffn(att(x))
    assert counter.get_total_flops() == n * pred.flops
    att.track_softmax_gradient = False
    with FlopCounterMode(display=False) as counter:
        fast = ffn(att(x))
    att.track_softmax_gradient = True
    torch.testing.assert_close(ffn(att(x)), fast, rtol=1e-5, atol=1e-5)


def test_break_even_and_ratios():
    assert sp.simplify(fc.break_even_symbolic() - (fc.c + 2 * fc.s * fc.e / (fc.s + fc.e))) == 0
    assert fc.flash_break_even_length(1536, 128, 256) == pytest.approx(256 + 2 * 128 * 1536 / 1664)
    # 2 GAU layers: 12 d^2 + 2 d s + O(d) against 12 d^2 + O(d): the excess falls like s / (6 d)
    assert fc.two_gau_over_transformer(4096) - 1 == pytest.approx(128 / (6 * 4096), rel=0.05)
    assert fc.quadratic_ratio_per_layer(768, 1536, 128) == pytest.approx(1664 / 1536)
    with pytest.raises(ValueError, match="multiple of chunk"):
        fc.flash_counts(32, 64, 16, 30, 8)
    with pytest.raises(ValueError, match="width must be a positive integer"):
        fc.gau_counts(0, 64, 16, 8)


def test_flash_reference_is_independent_of_the_module():
    cfg = fx.CONFIGS["smoke"]
    x = torch.randn(1, 16, 16, dtype=torch.float64)
    for causal in (False, True):
        layer = GAU(GAUConfig(d=16, e=32, s=8, chunk=4, causal=causal)).double()
        with torch.no_grad():
            assert float((layer(x) - fx.flash_reference(layer, x, causal)).abs().max()) < 1e-13
            # the reference can disagree: the other form of the global term is far off
            assert float((layer(x) - fx.flash_reference(layer, x, not causal)).abs().max()) > 1e-3
    assert fx.identities(cfg)["identity_is_glu"] < 1e-13


def test_total_length_normalisers_leak_and_ours_do_not():
    data = fx.leak(fx.CONFIGS["smoke"])["relative_change"]
    assert max(data["gau-ours"]) < 1e-13
    assert max(data["flash-ours"]) < 1e-13
    assert max(data["gau-printed"]) > 0.1
    assert max(data["gau-appendix"]) > 0.1
    assert max(data["flash-printed"]) > 0.01


def test_claims_and_verdicts_at_smoke_scale():
    data = fx.run(fx.CONFIGS["smoke"])
    claims = {c.key: c for c in fx.claims(data, "smoke")}
    for key in ("count-gau", "count-flash", "count-transformer", "padding", "identity-is-glu", "flash-causal"):
        assert claims[key].verdict == "holds", key
    assert claims["gau-quadratic-vs-mha"].measured == pytest.approx(2 * 1664 / 1536)
    assert claims["two-gau-params"].verdict == "fails"  # an exact count: 8.4% over at d = 256


@pytest.mark.slow
def test_bench_point_out_of_memory_is_recorded_and_the_sweep_goes_on():
    import dataclasses

    from analysis.studies.flash.experiments import flash_bench as fb

    # 65,536 tokens a step need over 0.9 GiB of the point's own (measured beside, uncapped); 0.1 GiB more than the
    # interpreter maps once started is too little, and both points are out of memory, not failed at their start
    cfg = dataclasses.replace(fb.CONFIGS["smoke"], process_cap_gb=0.1, tokens=1 << 16, lengths=(64,), threads=1,
                              isolate=True)
    data = fb.run(cfg, names=("flash-quad", "transformer"))
    assert [r["status"] for r in data["rows"]] == ["out of memory (process capped at 0.1 GiB over its start)"] * 2
    # a child that cannot even start its point (here: no room for its threads) is an error, not a measurement
    with pytest.raises(RuntimeError, match="benchmark point flash-quad "):
        fb.run(dataclasses.replace(cfg, process_cap_gb=0.002, threads=2, tokens=256), names=("flash-quad",))
    # a point that fits: one child, since each starts torch
    ok = fb.run(dataclasses.replace(fb.CONFIGS["smoke"], lengths=(32,), isolate=True), names=("transformer",))
    assert all(r["status"] == "ok" and r["peak_rss_bytes"] > 0 for r in ok["rows"])
    assert set(fb.summary(ok)["ratios_vs_transformer"]["transformer"].values()) == {1.0}


@pytest.mark.slow
def test_bench_smoke_runs_every_implementation_and_states_every_claim():
    import os

    from analysis.core.runner import run_in_process
    from analysis.core.trials import Experiment
    from analysis.studies.flash.experiments import flash_bench as fb

    # the chapter's own smoke run, shared through the live cache where the test command keeps one
    data, _ = run_in_process(Experiment(fb), "smoke", fb.CONFIGS["smoke"],
                             cache=os.environ.get("ANALYSIS_LIVE_CACHE") or None)
    assert {r["implementation"] for r in data["rows"] if r["status"] == "ok"} == set(fb.IMPLEMENTATIONS + fb.LAYERS)
    keys = {c.key for c in fb.claims(data, "smoke")}
    assert keys == {"quad-overtakes-transformer", "quad-lean-overtakes-transformer", "quad-batch", "quad-batch-unfused",
                    "flash-linear-time",
                    "flash-linear-activation", "lean-gau-over-peer-matched", "lean-gau-over-peer-defaults",
                    "lean-gau-memory-linear"}
    s = fb.summary(data)
    # the lean stack saves less per sequence than the dense one; the byte counts are deterministic
    saved = s["saved_bytes_per_sequence_at"]
    assert saved["flash-quad-lean"] < saved["flash-quad"]
    # the Transformer++ with explicit attention stores its softmax: more than the fused kernel saves
    assert s["unfused_transformer_saved_bytes_per_sequence"] > saved["transformer"]
    assert s["lean_layer_memory_exponent"] == pytest.approx(1.0, abs=0.02)
    assert "FLASH-Quad" in fb.table(data) and "matched" in fb.table(data)


def test_bench_counts_the_lean_and_fused_attention_as_the_causal_half():
    from analysis.studies.flash.experiments import flash_bench as fb
    from analysis.theory import flash_counts as fcounts

    cfg = fb.CONFIGS["cpu"]
    g = fcounts.gau_counts(256, 512, 128, 2048)
    assert fb.model_flops_per_token("gau-layer", cfg, 2048) == g.flops
    assert fb.model_flops_per_token("gau-layer-lean", cfg, 2048) == g.linear_flops + g.length_flops / 2
    assert fb.model_flops_per_token("flash-quad-lean", cfg, 2048) == 4 * (g.linear_flops + g.length_flops / 2)
    with pytest.raises(ValueError, match="implementation must be one of"):
        fb.kind("GAU")


def test_peer_gau_leak_is_one_minus_the_squared_prefix_share_times_a_fixed_dilution():
    from analysis.studies.flash.experiments.flash_counts import peer_gau_leak

    lengths = [16, 32, 64, 1024]
    changes = [0.0] + [0.6 * (1 - (16 / n) ** 2) for n in lengths[1:]]
    fix, note = peer_gau_leak(changes, lengths, 16)
    assert fix == pytest.approx(changes[-1], rel=1e-12) and "0.6" in note
    assert peer_gau_leak([0.0, 0.5], [16, 32], 16) == (None, "")


def _speed_rows(device_type: str, quad_over_transformer: dict[int, float]) -> dict:
    """A benchmark's data with only what the crossover claims read: tokens/s of FLASH-Quad and the Transformer++."""
    rows = []
    for n, ratio in quad_over_transformer.items():
        rows.append({"implementation": "transformer", "n": n, "status": "ok", "tokens_per_s": 1000.0})
        rows.append({"implementation": "flash-quad", "n": n, "status": "ok", "tokens_per_s": 1000.0 * ratio})
    return {"device_type": device_type, "threads": 2, "rows": rows}


@pytest.mark.parametrize("device, ratios, measured, bound, verdict", [
    # a GPU sweep that crosses inside its lengths: placed by log interpolation, judged against 256 +- 106
    ("cuda", {128: 0.9, 256: 1.0, 512: 1.2}, 256.0, "", "holds"),
    ("cuda", {128: 0.8, 256: 0.95, 512: 1.2}, 256 * 2 ** (math.log(0.95) / math.log(0.95 / 1.2)), "", "holds"),
    ("cuda", {256: 0.6, 512: 0.9, 1024: 1.2}, 512 * 2 ** (math.log(0.9) / math.log(0.9 / 1.2)), "", "fails"),
    # faster already at its shortest length, 512: the crossover is at or below 512, unplaced
    ("cuda", {512: 1.1, 1024: 1.3}, 512.0, "≤", "inconclusive"),
    # faster already at 64, below the least crossover the claim allows (150): a crossover below it fails the claim
    ("cuda", {64: 1.1, 128: 1.3}, 64.0, "≤", "fails"),
    ("cuda", {256: 0.5, 512: 0.7}, 512.0, "≥", "fails"),  # never faster: the crossover is beyond 512
    # on a CPU the run cannot decide an accelerator's crossover, whatever it measures
    ("cpu", {128: 0.9, 256: 1.0, 512: 1.2}, 256.0, "", "inconclusive"),
    ("cpu", {256: 0.5, 512: 0.7}, 512.0, "≥", "inconclusive"),
])
def test_crossover_claims_say_what_a_sweep_can_place(device, ratios, measured, bound, verdict):
    from analysis.studies.flash.experiments import flash_bench as fb

    claim = fb.crossover_claim(_speed_rows(device, ratios), "flash-quad", "quad-overtakes-transformer",
                               "FLASH-Quad's", "test")
    assert claim is not None
    if measured is not None:
        assert claim.measured == pytest.approx(measured)
    assert claim.measured_bound == bound
    # the run's scale follows its device: a cpu run is a check of a gpu-only claim, never its evidence
    made = claim.identified("flash-bench", "cpu" if device == "cpu" else "gpu", recorded=True)
    assert made.verdict == verdict
    assert claim.gpu_only == fb.GPU_ONLY_CROSSOVER and not claim.undecided.startswith("the source's crossover")
    if device == "cpu":
        assert made.inconclusive_reason.startswith("only a gpu run decides it (the source's crossover is an "
                                                   "accelerator's")


def test_flash_saved_bytes_of_a_sequence_are_linear_and_the_superlinear_rest_is_shared_by_the_batch():
    # the memory exponent's tolerance rests on this: one more sequence adds bytes linear in n, and what a batch of one
    # saves beyond that (weights, position tables) does not depend on the batch
    from analysis.studies.flash.experiments import flash_bench as fb

    cfg = fb.CONFIGS["smoke"]
    torch.manual_seed(0)
    stack = fb.build("flash", cfg)
    saved = {(b, n): fb.saved_bytes(stack, torch.randn(b, n, cfg.d)) for b in (1, 2, 3) for n in (64, 128)}
    for n in (64, 128):
        assert saved[(3, n)] - saved[(2, n)] == saved[(2, n)] - saved[(1, n)]  # a sequence's own bytes
    per_sequence = {n: saved[(2, n)] - saved[(1, n)] for n in (64, 128)}
    assert per_sequence[128] == 2 * per_sequence[64]  # linear in n
    shared = {n: saved[(1, n)] - per_sequence[n] for n in (64, 128)}
    assert shared[128] > shared[64] > 0  # shared tensors grow with n: over a batch of tokens / n, faster than n
    # what the benchmark records: the same split, from the first sequence of any batch, for a compiled stack too
    for n in (64, 128):
        assert fb.sequence_bytes(stack, torch.randn(4, n, cfg.d)) == (per_sequence[n], shared[n])
    layer = fb.build("gau-layer-lean-compiled", cfg)
    own, common = fb.sequence_bytes(layer, torch.randn(3, 64, cfg.d))
    assert own > 0 and common > 0 and own == fb.sequence_bytes(fb.build("gau-layer-lean", cfg),
                                                               torch.randn(1, 64, cfg.d))[0]


def test_every_claim_of_a_smoke_run_names_its_rival():
    cfg = fx.CONFIGS["smoke"]
    data = fx.run(cfg)
    claims = {c.key: c for c in fx.claims(data, "smoke")}
    assert all(c.has_rival for c in claims.values()), [k for k, c in claims.items() if not c.has_rival]
    # the closed form counts the full n x n products; its rival, the causal half of them
    gau = fc.gau_counts(cfg.d, 2 * cfg.d, cfg.s, cfg.count_length)
    assert claims["count-gau"].alternative == gau.linear_flops + gau.length_flops / 2
    flash = fc.flash_counts(cfg.d, 2 * cfg.d, cfg.s, cfg.count_length, cfg.chunk)
    assert claims["count-flash"].alternative == flash.flops - cfg.chunk * (cfg.s + 2 * cfg.d)
    # a normaliser that counts the padded keys scales every real row by real / padded (no biases at init)
    assert claims["padding"].alternative == pytest.approx(1 - cfg.prefix / max(cfg.lengths))
    # ours against the total-length normaliser it replaces, which leaks by 1 - prefix / n
    assert claims["leak-gau-ours"].alternative == pytest.approx(1 - cfg.prefix / max(cfg.lengths))
    assert claims["ones-is-unnormalised"].alternative == pytest.approx(1 - 1 / (4 * cfg.prefix))
    assert 0 < claims["flash-causal"].effect < 1  # the linear term's share of FLASH's output
    for key in ("count-gau", "padding", "identity-is-glu", "ones-is-unnormalised", "flash-global", "flash-causal"):
        assert claims[key].verdict == "holds", key
