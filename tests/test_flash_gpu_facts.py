"""The FLASH chapter's GPU facts: the kernel's gpu record beside a current cpu one, and the efficiency records."""

import json
import shutil
from pathlib import Path

from analysis.studies.chapter import Chapter, RenderedClaims, RunSet, _recorded_run
from analysis.compute.steptimes import BENCH_DIR, efficiency_table, recorded_targets
from analysis.studies.flash.targets import efficiency_targets
from analysis.studies.flash.kernel import gpu_section

RECORDS = str(Path(__file__).resolve().parent.parent / "results")  # the repository's records (tests write elsewhere)


def test_the_kernels_gpu_record_is_shown_beside_a_current_cpu_record_and_only_then():
    cpu = _recorded_run("gau-kernel", "cpu", RECORDS)
    gpu = _recorded_run("gau-kernel", "gpu", RECORDS)
    assert cpu is not None and gpu is not None
    live = RunSet("this build", cpu.data, "p", "smoke")
    current_cpu = RunSet(cpu.label, cpu.data, cpu.provenance, "cpu", recorded=True)
    stale_gpu = RunSet(gpu.label, gpu.data, gpu.provenance, "gpu", recorded=True, stale=("the experiment's code has changed since",))
    ch = Chapter("flash", "t", "smoke", RenderedClaims("flash", "t"))
    ch.runs = {"gau-kernel": [live, current_cpu, stale_gpu]}
    text = gpu_section(ch).data
    assert ch.best("gau-kernel") is current_cpu
    assert text.startswith("**Measured on the GPU.** The gpu record (gau-kernel at gpu scale, measured on ")
    assert "It is stale: it was made by older code." in text
    assert "| float16 |" in text and "| bfloat16 |" in text  # its own exactness table
    from analysis.studies.flash.experiments import gau_kernel as gk

    timed = gk.summary(gpu.data)["lengths"]
    assert timed and all(f"| {row['n']} | {100 * row['peak_fraction']:.1f}% |" in text for row in timed)
    ch.runs = {"gau-kernel": [live, stale_gpu]}  # the gpu record is the strongest run: the tables above are its own
    assert gpu_section(ch).data == ""
    ch.runs = {"gau-kernel": [live, current_cpu]}
    assert gpu_section(ch).data == ""


def test_the_efficiency_table_shows_each_recorded_target_and_says_when_none_is(tmp_path):
    targets = efficiency_targets("gpu")
    assert efficiency_table(targets, "gpu", tmp_path).startswith("No GPU has timed the efficiency targets yet")
    shutil.copy(BENCH_DIR / "efficiency.gpu.h100.json", tmp_path)
    text = efficiency_table(targets, "gpu", tmp_path)
    rows = recorded_targets("gpu", targets, tmp_path, "h100")
    prov = json.loads((tmp_path / "efficiency.gpu.h100.json").read_text())["provenance"]
    assert rows and text.startswith(f"Measured on {prov['device']}, torch {prov['torch']}")
    lines = [line for line in text.splitlines() if line.startswith("| ") and " ms |" in line]
    assert len(lines) == len(rows)
    for r, line in zip(rows.values(), lines):
        assert line.startswith(f"| {r['label'].split(',')[0]},") and "M parameters" not in line
        assert f"| {1e3 * r['seconds']:.1f} ms | {1e3 * r['eager_seconds']:.1f} ms | {r['eager_speedup']:.2f}x |" in line
        assert line.endswith({True: " yes |", False: " **no** |"}[r["met"]])


def test_the_kernels_claims_are_decided_by_the_gpu_record_alone():
    """On the records: the float16 check holds on Triton's interpreter and fails on the GPU. The chapter's claim is
    the gpu record's; while that record is stale the claim is inconclusive, and the cpu check stands beside it."""
    from analysis.core.registry import EXPERIMENTS
    from analysis.core.results import find_record
    from analysis.core.verify import beside_text, strongest_claims

    made = {}
    for size in ("cpu", "gpu"):
        record = find_record("gau-kernel", size, RECORDS)
        for c in EXPERIMENTS["gau-kernel"].claims(record.data, f"recorded-{size}"):
            made[(size, c.key)] = c
    assert all(c.gpu_only for c in made.values())
    cpu = made[("cpu", "kernel-exact-float16")].identified("gau-kernel", "cpu", True)
    gpu = made[("gpu", "kernel-exact-float16")].identified("gau-kernel", "gpu", True, stale=True)
    assert cpu.check_verdict == "holds" and gpu.check_verdict == "fails"  # the contradiction the rule settles
    shown = strongest_claims([cpu, gpu])
    assert shown == [gpu] and gpu.verdict == "inconclusive" and "stale" in gpu.inconclusive_reason
    assert beside_text(gpu, [cpu, gpu]).endswith("holds as a check")
    current = made[("gpu", "kernel-exact-float16")].identified("gau-kernel", "gpu", True)
    assert strongest_claims([cpu, current]) == [current] and current.verdict == "fails"


def test_the_exact_rows_sentence_gives_the_gaps_and_what_the_claims_decide():
    from types import SimpleNamespace

    from analysis.studies.flash.kernel import exact_rows_sentence

    chk = {"interpreted": True, "prefix_gap": 0.0, "padding_gap": 3e-8}

    def claim(verdict: str, reason: str = "") -> SimpleNamespace:
        return SimpleNamespace(verdict=verdict, verdict_text=lambda: verdict, inconclusive_reason=reason)

    text = exact_rows_sentence(chk, claim("inconclusive", "only a gpu run decides it"),
                               claim("inconclusive", "only a gpu run decides it"))
    assert text == ("A causal prefix and a padded sequence give the rows of the shorter run with largest gaps of 0 "
                    "and 3e-08, in float32 on Triton's interpreter on the CPU. The claim that each is exact is "
                    "inconclusive: only a gpu run decides it.")
    split = exact_rows_sentence(dict(chk, interpreted=False), claim("holds"), claim("fails"))
    assert split.endswith("compiled on a GPU. The claim that the prefix is exact holds, and the claim that the "
                          "padding is exact fails.")
