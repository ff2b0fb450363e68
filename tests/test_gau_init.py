import math

import numpy as np
import pytest

from analysis.cli.main import main
from analysis.studies.gau_init.experiments import gau_init as exp
from analysis.core.runner import run_experiment
from analysis.theory import gau_init as th


@pytest.mark.parametrize("name", sorted(th.ACTIVATIONS))
@pytest.mark.parametrize("power", [1, 2, 4])
def test_moments_match_mpmath(name, power):
    got = th.activation_moment(name, power)
    ref = th.activation_moment_reference(name, power)
    assert got == pytest.approx(ref, rel=1e-12, abs=1e-15)


def test_known_moments_and_scaling():
    mu, nu2 = th.activation_moments("swish")
    assert round(mu, 4) == 0.2066 and math.floor(nu2 * 1e4) / 1e4 == 0.3557
    assert th.activation_moments("relu") == pytest.approx((1 / math.sqrt(2 * math.pi), 0.5), rel=1e-12)
    # relu is homogeneous: moments scale with sigma and sigma^2
    assert th.activation_moments("relu", 3.0) == pytest.approx((3 / math.sqrt(2 * math.pi), 4.5), rel=1e-12)
    assert th.first_hermite_coefficient("relu") == pytest.approx(0.5, rel=1e-12)
    assert th.first_hermite_coefficient("identity", 2.0) == pytest.approx(2.0, rel=1e-12)


def test_predictions_source_numbers_and_limits():
    p = th.gau_output_rms(128, 512, 768, 1536)
    assert p.rms_source == pytest.approx(128 * p.nu2**3 / 512) and 0.0105 < p.rms_source < 0.0115
    assert p.diag_offdiag_ratio_source == pytest.approx(69.4, abs=0.1)
    # the corrected RMS levels off in n instead of falling like 1/n
    far = th.gau_output_rms(128, 2**16, 768, 1536).rms_corrected
    assert far > 0.5 * p.rms_corrected
    with pytest.raises(ValueError, match="s \\(key size 64\\) must not exceed e"):
        th.gau_output_rms(64, 10, 16, 32)
    with pytest.raises(ValueError, match="init must be"):
        th.gau_output_rms(8, 10, 16, 32, init="orthogonal")
    with pytest.raises(ValueError, match="activation must be one of"):
        th.activation_moments("softplus")
    with pytest.raises(ValueError, match="sigma must be positive"):
        th.activation_moments("swish", -1.0)


def test_experiment_smoke_and_claims():
    data = run_experiment("gau-init", exp.CONFIGS["smoke"])
    for r in data["grid"]:
        # the corrected prediction is within a factor 2 everywhere; the source's is not near large n
        assert 0.5 < r["rms"] / r["pred_rms_corrected"] < 2.0
    big = max((r for r in data["grid"] if r["init"] == "lecun"), key=lambda r: (r["n"], r["s"]))
    assert big["rms"] / big["pred_rms_source"] > 3
    keys = {c.key: c for c in exp.claims(data, "smoke")}
    assert keys["swish-mean"].verdict == "holds"
    assert keys["rms-source"].verdict == "fails"
    assert keys["lambda7"].verdict == "fails" and keys["lambda7"].measured > 7.5
    # nu^2 = 0.35578 is what the source's truncated 0.3557... says: it holds, with no corrected number
    assert keys["swish-second-moment"].verdict == "holds" and keys["swish-second-moment"].corrected is None
    assert 0.3557 <= keys["swish-second-moment"].measured < 0.3558
    seeds = exp.CONFIGS["smoke"].seeds
    for key in ("a-diag", "a-offdiag", "rms-source", "rms-slope", "rms-corrected-grid", "lambda7"):
        c = keys[key]
        assert f"over {seeds} seeds ({seeds - 1} df)" in c.tolerance_basis and "standard deviation" not in c.tolerance_basis
        assert c.detectable is not None and math.isfinite(c.detectable)
    for key in ("a-diag", "a-offdiag", "rms-source"):  # the gap to the corrected prediction is the effect
        assert keys[key].effect == pytest.approx(keys[key].corrected - keys[key].predicted)


def test_the_softmax_mode_is_the_mean_of_v_and_validates_its_inputs():
    mu, nu2 = th.activation_moments("swish", 0.5)
    assert th.gau_output_rms_softmax(1, 0.5, 0.25) == pytest.approx(0.5 * nu2 ** 0.5 * nu2 ** 0.5, rel=1e-12)  # one key
    assert th.gau_output_rms_softmax(10 ** 9, 0.5, 0.25) == pytest.approx(0.5 * nu2 ** 0.5 * mu, rel=1e-6)
    with pytest.raises(ValueError, match="n must be a positive integer"):
        th.gau_output_rms_softmax(0, 0.5, 0.25)
    with pytest.raises(ValueError, match="sigma must be positive"):
        th.gau_output_rms_softmax(8, -0.5, 0.25)


def test_gau_alphas_init_sits_at_the_cube_root_of_its_depth():
    lo, mid, hi = exp.alpha_lambdas(exp.CONFIGS["cpu"])
    assert mid == pytest.approx(24 ** (-1 / 3)) and hi / lo == pytest.approx(2.0)
    rows = [{"lambda": lam, "rms": lam ** 4, "rms_std": 0.0, "pred": lam ** 5} for lam in (lo, mid, hi)]
    assert exp.alpha_exponent(rows, 3) == pytest.approx((4.0, 0.0)) and exp.alpha_exponent(rows, 3, "pred")[0] == 5.0


def test_gau_alphas_softmax_breaks_lambda7_and_follows_the_softmax_mode():
    data = run_experiment("gau-init", exp.CONFIGS["smoke"])
    keys = {c.key: c for c in exp.claims(data, "smoke")}
    soft = keys["gau-alpha-lambda7-softmax"]
    assert soft.verdict == "fails" and 3.5 < soft.measured < 4.5  # near-uniform softmax: U, V and W_o give about 4
    assert keys["gau-alpha-softmax-rms"].verdict == "holds"
    assert keys["gau-alpha-lambda7-relu2"].measured > 7.5


def test_cli_moments_and_magnitude(capsys):
    import json

    assert main(["moments", "swish", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["mean"] == pytest.approx(0.20662096, rel=1e-7) and doc["second_moment"] == pytest.approx(0.35577552, rel=1e-7)
    assert main(["gau-magnitude", "--d", "64", "--e", "128", "--s", "32", "--n", "128", "--seeds", "2", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert set(doc) >= {"predicted_source", "measured_rms", "measured_std", "predicted_corrected"}
    assert main(["gau-magnitude", "--d", "64", "--e", "16", "--s", "32", "--n", "128"]) == 2
    assert "must not exceed --e" in capsys.readouterr().err


def test_coord_check_smoke():
    from analysis.studies.gau_init.experiments import coord_check

    cfg = coord_check.CONFIGS["smoke"]
    data = run_experiment("coord-check", cfg)
    assert len(data["rows"]) == len(coord_check.ARCHS) * len(cfg.depths) * len(cfg.widths) * len(cfg.steps)
    gau = [r for r in data["rows"] if r["block"] == "gau"]
    assert all(len(r["ratios"]) == 2 * r["depth"] and all(v > 0 for v in r["ratios"]) for r in gau)
    (claim,) = coord_check.claims(data, "smoke")
    # the claim averages the medians of the widest GAU stacks at initialisation (one per depth), and its verdict
    # follows from the data: made-up branch ratios of 1% hold, of 10% fail, and one stack alone decides nothing
    widest = max(cfg.widths)
    tops = [r for r in gau if r["step"] == 0 and r["width"] == widest]
    assert len(tops) == len(cfg.depths)
    assert claim.measured == pytest.approx(np.mean([np.median(r["ratios"]) for r in tops]))
    assert math.isfinite(claim.detectable) and "GAU stacks" in claim.tolerance_basis
    assert claim.has_rival and claim.alternative == 1.0  # a branch as large as its input
    for size, verdict in ((0.01, "holds"), (0.1, "fails")):
        fake = {"rows": [{**top, "ratios": [size * (1 + 0.01 * i)] * 8, "median": size * (1 + 0.01 * i)}
                         for i, top in enumerate(tops)]}
        assert coord_check.claims(fake, "x")[0].verdict == verdict
    one = {"rows": [{**tops[0], "ratios": [0.01] * 8, "median": 0.01}]}
    assert coord_check.claims(one, "x")[0].verdict == "inconclusive"


def test_coord_check_units_are_the_widest_stacks_not_the_layers():
    from analysis.studies.gau_init.experiments import coord_check

    rows = [{"block": "gau", "step": 0, "width": w, "depth": d, "median": m, "ratios": [m] * 2 * d}
            for w, d, m in ((64, 2, 0.2), (128, 2, 1.0), (128, 4, 1.4), (128, 8, 1.2))]
    rows += [{"block": "gau", "step": 3, "width": 128, "depth": 2, "median": 9.0, "ratios": [9.0] * 4},
             {"block": "transformer", "step": 0, "width": 256, "depth": 2, "median": 9.0, "ratios": [9.0] * 2}]
    data = {"rows": rows}
    assert [r["depth"] for r in coord_check.widest_gau_stacks(data)] == [2, 4, 8]
    est = coord_check.branch_estimate(data)
    assert est.value == pytest.approx(1.2) and est.se == pytest.approx(0.2 / math.sqrt(3)) and est.nu == 2


def test_gau_init_claims_use_the_standard_error_over_seeds_with_t():
    est = exp.seed_estimate(2.0, 0.3, 3, scale=2.0)
    assert est.value == pytest.approx(1.0) and est.se == pytest.approx(0.15 / math.sqrt(3)) and est.units == "seeds"
    assert est.nu == 2


def test_causal_gau_early_rows_are_large():
    import torch

    from analysis.models.gau import GAU, GAUConfig

    torch.manual_seed(0)
    x = torch.randn(2, 64, 128)
    with torch.no_grad():
        causal = GAU(GAUConfig(d=128, e=256, s=64, causal=True))(x).pow(2).mean((0, 2)).sqrt()
    assert causal[0] > 5 * causal[-1]  # row 1 sees one key: A_11 ~ s nu^4, not s nu^4 / n


def test_exponent_at_half_reads_a_power_law_exactly_and_needs_the_range():
    from analysis.studies.gau_init.experiments.gau_init import exponent_at_half, half_claim

    lams = [0.3, 0.45, 0.7, 0.9, 1.2, 1.6]
    sweep = {"d": 8, "n": 4, "s": 2,
             "rows": [{"lambda": lam, "rms": lam ** 7, "rms_std": 0.01 * lam ** 7, "pred_corrected": lam ** 9}
                      for lam in lams]}
    p, se, interp = exponent_at_half(sweep, seeds=4)
    assert p == pytest.approx(7.0, abs=1e-12) and interp == pytest.approx(0.0, abs=1e-9)
    # each interpolated ln RMS has an SE between 0.005 / sqrt 2 and 0.005 (0.01 / sqrt 4 at each grid point)
    assert 0.005 / math.log(2) <= se <= 0.005 * math.sqrt(2) / math.log(2)
    claim = half_claim(sweep, 4, "test")
    assert claim.verdict == "holds" and claim.corrected == pytest.approx(9.0) and claim.corrected_verdict == "fails"
    with pytest.raises(ValueError, match="must span 1/2 to 1"):
        exponent_at_half({"rows": sweep["rows"][2:]}, seeds=4)


def test_init_names_read_as_the_prose_writes_them():
    import pytest

    from analysis.studies.gau_init.experiments.gau_init import init_words

    assert init_words("lecun") == "LeCun" and init_words("std0.02") == "std 0.02"
    with pytest.raises(ValueError, match="init must be"):
        init_words("xavier")
