import json
import math
import subprocess
import sys

import pytest

from analysis.cli.main import main


def run_cli(*args):
    return subprocess.run([sys.executable, "-m", "analysis", *args], capture_output=True, text=True, timeout=120)


def exit_status(capsys, *args):
    """``python -m analysis ARGS`` in this process: (exit status, stderr), as the process would end and print them
    (argparse's own refusals end in SystemExit)."""
    try:
        status = main(list(args))
    except SystemExit as stop:
        status = stop.code
    return status, capsys.readouterr().err


def test_help_lists_subcommands():
    out = run_cli("--help")
    assert out.returncode == 0
    for sub in ("entropy", "run", "list"):
        assert sub in out.stdout


def test_entropy_text_and_json(capsys):
    assert main(["entropy", "--classes", "100000", "--p", "0.8"]) == 0
    text = capsys.readouterr().out
    assert "nats" in text and "bits" in text
    assert main(["entropy", "--classes", "2", "--p", "0.5", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["entropy_nats"] == pytest.approx(math.log(2)) and doc["entropy_bits"] == pytest.approx(1.0)
    assert doc["cross_entropy_bits"] == pytest.approx(1.0)


@pytest.mark.parametrize(
    "args, message",
    [
        (["entropy", "--classes", "0", "--p", "0.5"], "--classes must be an integer in [1, 9007199254740992]"),
        (["entropy", "--classes", "x", "--p", "0.5"], "--classes must be an integer in [1, 9007199254740992]"),
        (["entropy", "--classes", "10", "--p", "0"], "--p must be a probability in (0, 1]"),
        (["entropy", "--classes", "10", "--p", "nan"], "--p must be a probability"),
        (["entropy", "--classes", "1", "--p", "0.5"], "p must be 1 when classes == 1"),
        (["entropy", "--p", "0.5"], "required"),
        (["run", "nope", "--scale", "smoke"], "experiment must be one of"),
        (["run", "entropy-lm", "--scale", "huge"], "invalid choice"),
        (["run", "entropy-lm", "--scale", "smoke", "--corpus", "/no/such/file"], "does not exist"),
        (["frobnicate"], "invalid choice"),
    ],
)
def test_bad_input_exits_2_with_one_line(args, message, capsys):
    status, err = exit_status(capsys, *args)
    assert status == 2 and message in err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1


def test_run_records_and_list_shows_it(tmp_path):
    out = run_cli("run", "entropy-lm", "--scale", "smoke", "--out", str(tmp_path), "--quiet")
    assert out.returncode == 0, out.stderr
    assert (tmp_path / "entropy-lm.smoke.json").exists()
    assert "sha256" in out.stdout and "recorded" in out.stdout


def test_corrupted_record_is_reported_not_replaced(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("ANALYSIS_RESULTS_DIR", str(tmp_path))
    bad = tmp_path / "entropy-lm.gpu.json"
    bad.write_text('{"schema": "analysis.results/1", ')
    assert main(["list"]) == 2
    assert "entropy-lm.gpu.json: not valid JSON" in capsys.readouterr().err
    assert bad.read_text() == '{"schema": "analysis.results/1", '


def test_a_bug_exits_1_with_its_traceback(monkeypatch, capsys):
    from analysis.studies.entropy.experiments import entropy_lm

    def broken(cfg, trial, device) -> entropy_lm.CorpusRun:
        raise ValueError("a bug deep inside run")

    monkeypatch.setattr(entropy_lm, "run_trial", broken)
    assert main(["run", "entropy-lm", "--scale", "smoke", "--quiet"]) == 1
    err = capsys.readouterr().err
    assert "Traceback" in err and "a bug deep inside run" in err


def test_build_plumbing_is_not_in_the_readers_help():
    out = run_cli("--help")
    assert "book-config" not in out.stdout and "scale-default" not in out.stdout
    assert "plan" in out.stdout


def test_list_marks_missing_current_and_stale_records(tmp_path, monkeypatch, capsys):
    import json

    monkeypatch.setenv("ANALYSIS_RESULTS_DIR", str(tmp_path))
    assert main(["run", "ffn-basics", "--scale", "smoke", "--quiet"]) == 0
    capsys.readouterr()
    assert main(["list"]) == 0
    out = capsys.readouterr().out
    block = out[out.index("ffn-basics:"):].splitlines()
    assert "smoke recorded" in block[1] and "current" in block[1] and "none" in block[2]
    path = tmp_path / "ffn-basics.smoke.json"
    doc = json.loads(path.read_text())
    doc["config"]["grid"] += 1
    doc["fingerprint"]["config"] = "0" * 16
    path.write_text(json.dumps(doc))
    assert main(["list"]) == 0
    out = capsys.readouterr().out
    assert "STALE: config differs (grid:" in out[out.index("ffn-basics:"):]


def test_run_all_keeps_current_records_and_logs(tmp_path, monkeypatch, capsys):
    from analysis.core import registry as experiments
    from analysis.core import runner

    ran = []
    monkeypatch.setattr(experiments, "EXPERIMENTS", {k: experiments.EXPERIMENTS[k] for k in ("ffn-basics", "entropy-bound")})
    real = runner.run_and_record

    def counting(name, *a, **kw):
        ran.append(name)
        return real(name, *a, **kw)

    monkeypatch.setattr(runner, "run_and_record", counting)
    assert main(["run", "--all", "--scale", "smoke", "--out", str(tmp_path), "--quiet"]) == 0
    assert sorted(ran) == ["entropy-bound", "ffn-basics"]
    assert main(["run", "--all", "--scale", "smoke", "--out", str(tmp_path), "--quiet"]) == 0  # resume: nothing left
    assert sorted(ran) == ["entropy-bound", "ffn-basics"] and "current record kept" in capsys.readouterr().out
    assert len((tmp_path / "run-all.smoke.log").read_text().splitlines()) == 2
    assert main(["run", "--all", "ffn-basics", "--scale", "smoke"]) == 2


def test_scale_json_keys_and_values(capsys):
    assert main(["scale", "--scores", "normal", "--n", "512", "--d", "64", "--json", "--reps", "64"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["alpha_mean_field"] == pytest.approx(2.0083949, rel=1e-6)
    assert doc["logit_scale_mean_field"] == pytest.approx(doc["alpha_mean_field"] / 8)
    assert doc["alpha_finite_sample"] > doc["alpha_mean_field"]
    assert main(["scale", "--scores", "cosine", "--d", "128", "--n", "1e12", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["alpha_finite_sample"] is None and doc["alpha_mean_field"] > 70


@pytest.mark.parametrize(
    "args, message",
    [
        (["scale", "--scores", "normal", "--n", "1"], "--n must be a number in [2, 1e+15]"),
        (["scale", "--scores", "normal", "--n", "inf"], "--n must be a number"),
        (["scale", "--scores", "cosine", "--n", "100"], "--d is required for --scores cosine"),
        (["scale", "--scores", "cosine", "--n", "100", "--d", "2"], "--d must be an integer in [3, 1048576]"),
        (["scale", "--scores", "laplace", "--n", "100"], "invalid choice"),
        (["run", "softmax-scale-mc", "--scale", "smoke", "--corpus", "x.txt"], "does not apply to experiment"),
    ],
)
def test_scale_bad_input_exits_2(args, message, capsys):
    status, err = exit_status(capsys, *args)
    assert status == 2 and message in err and "Traceback" not in err


def test_a_refusal_is_the_process_exit_status():
    """The in-process calls above end as the process does: exit status 2 and one line naming the argument."""
    out = run_cli("entropy", "--classes", "0", "--p", "0.5")
    assert out.returncode == 2 and out.stderr.strip().splitlines() == [
        "error: --classes must be an integer in [1, 9007199254740992]; got '0'"]


# The packages only the book needs: a GPU machine with torch and the scientific stack but none of these must still
# run the campaign and the step-time benchmark (the experiments import their chapter's package)
BOOK_ONLY = ("IPython", "docutils", "sphinx", "myst_nb", "myst_parser", "nbformat", "jupyter_book", "bs4",
             "nbclient", "jupyter_cache", "pybtex", "ray")
_BLOCKED_MAIN = """
import importlib.abc, sys
class Block(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name.split(".")[0] in {blocked!r}:
            raise ModuleNotFoundError(f"No module named {{name!r}} (blocked)")
sys.meta_path.insert(0, Block())
import json
from analysis.cli.main import main
for argv in json.loads(sys.argv[1]):  # one interpreter for every command: each start imports torch
    print("running:", *argv, file=sys.stderr, flush=True)
    status = main(argv)
    if status:
        sys.exit(status)
"""


@pytest.mark.slow
def test_campaign_and_steptimes_run_without_the_books_packages(tmp_path):
    """With IPython, Sphinx, docutils, Jupyter and Ray unimportable, every experiment is discovered, the campaign
    lists its trials and runs one, the step targets are timed and a lease plans its steps (smoke scale)."""
    code = _BLOCKED_MAIN.format(blocked=set(BOOK_ONLY))
    commands = [["campaign", "--scale", "smoke", "--status"],
                ["campaign", "--scale", "smoke", "--only", "gau-heads", "--out", str(tmp_path), "--quiet"],
                ["steptimes", "--targets", "--scale", "smoke", "--repeats", "1", "--out", str(tmp_path), "--quiet"],
                ["lease", "plan", "--scale", "smoke"]]
    proc = subprocess.run([sys.executable, "-c", code, json.dumps(commands)], capture_output=True, text=True,
                          check=False)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stderr.count("running: ") == len(commands)
    assert (tmp_path / "gau-heads.smoke.json").exists() and (tmp_path / "efficiency.smoke.cpu.json").exists()
