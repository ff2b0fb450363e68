"""A lent GPU session's command: what travels, the steps it picks, and its results packed there and taken in here."""

import hashlib
import io
import json
import lzma
import os
import subprocess
import sys
import tarfile
from dataclasses import asdict
from pathlib import Path

import pytest

from analysis.compute import lease
from analysis.tasks.data import CorpusError
from analysis.core.results import REPO_ROOT
from analysis.studies.flash.targets import efficiency_targets


def test_pins_come_from_the_requirements_file(tmp_path):
    pins = lease.pinned_versions()
    assert set(pins) == set(lease.PEERS) and pins["FLASH-pytorch"] == "0.1.9"
    req = tmp_path / "req.txt"
    req.write_text("flash_pytorch == 1.2.3  # a comment\nEinops==0.8\n")
    assert lease.pinned_versions(req, ("FLASH-pytorch", "einops")) == {"FLASH-pytorch": "1.2.3", "einops": "0.8"}
    with pytest.raises(lease.LeaseError, match="pins no version of rotary-embedding-torch"):
        lease.pinned_versions(req)


def test_wheels_already_carried_are_not_fetched_again(tmp_path, monkeypatch):
    wheels = tmp_path / lease.WHEELS
    wheels.mkdir()
    have = wheels / "FLASH_pytorch-0.1.9-py3-none-any.whl"
    have.write_bytes(b"zip")
    (wheels / "FLASH_pytorch-0.1.8-py3-none-any.whl").write_bytes(b"older")

    def no_pip(*args, **kwargs):
        raise AssertionError("pip was called for a wheel that is there")

    monkeypatch.setattr(lease.subprocess, "run", no_pip)
    assert lease.download_wheels(tmp_path, {"FLASH-pytorch": "0.1.9"}) == [have]


def test_what_travels_is_counted_against_the_limit(tmp_path):
    import shutil

    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    (tmp_path / ".gitignore").write_text("ignored/\n.lease/\n")
    for name, size in (("a.py", 100), ("ignored/big.bin", 10_000), (".lease/wheels/w.whl", 1_000), ("new.txt", 10)):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_bytes(b"x" * size)
    subprocess.run(["git", "-C", str(tmp_path), "add", "a.py", ".gitignore"], check=True)
    assert lease.travelling_bytes(tmp_path) == 100 + 10 + 1_000 + len("ignored/\n.lease/\n")
    shutil.rmtree(tmp_path / ".lease")
    assert lease.travelling_bytes(tmp_path) == 100 + 10 + len("ignored/\n.lease/\n")
    assert 0 < lease.travelling_bytes() < lease.MAX_TRAVEL_BYTES  # this checkout, with or without .lease/


def test_the_corpus_travels_compressed_and_is_checked_when_restored(tmp_path):
    text = b"# ---- pkg/mod.py ----\nx = 1\n" * 1000
    digest = hashlib.sha256(text).hexdigest()
    corpus = tmp_path / "corpus.txt"
    corpus.write_bytes(text)
    carried = tmp_path / "lease"
    xz = lease.compress_corpus(corpus, carried)
    assert xz.stat().st_size < len(text) / 10 and lzma.decompress(xz.read_bytes()) == text
    mtime = xz.stat().st_mtime_ns
    assert lease.compress_corpus(corpus, carried).stat().st_mtime_ns == mtime  # the same content is not rewritten
    target = tmp_path / "device" / "pinned-sources.txt"
    assert lease.restore_corpus(carried, target, digest) == target and target.read_bytes() == text
    assert lease.restore_corpus(tmp_path / "nothing", tmp_path / "absent.txt", digest) is None
    target.unlink()
    with pytest.raises(CorpusError, match="SHA-256"):  # bytes that are not the pinned corpus are refused
        lease.restore_corpus(carried, target, "0" * 64)
    (carried / lease.CORPUS_XZ).write_bytes(b"not xz")
    target.unlink()
    with pytest.raises(lease.LeaseError, match="not an xz file"):
        lease.restore_corpus(carried, target, digest)


def test_the_steps_follow_what_results_hold_for_the_device(tmp_path):
    """The efficiency targets run at gpu scale while the device's kind is held to them and untimed; the campaign
    follows the prepared queue when one travelled, else runs every experiment (or a selection) in priority order."""
    assert [s.name for s in lease.plan_lease("smoke", ["gau-length"], tmp_path, tag="h100")] == ["campaign"]
    steps = lease.plan_lease("smoke", None, tmp_path, tag="h100")
    assert [s.name for s in steps] == ["campaign"] and "--only" not in steps[0].argv  # no targets below gpu scale
    bench = tmp_path / "benchmarks"
    bench.mkdir()
    targets = efficiency_targets("gpu")
    rows = [{"name": t.name, "model": asdict(t.model), "batch": t.batch, "ctx": t.ctx} for t in targets]
    (bench / "efficiency.gpu.h100.json").write_text(json.dumps({"rows": rows[1:]}))
    steps = lease.plan_lease("gpu", None, tmp_path, tag="h100", targets=targets)
    assert [s.name for s in steps] == ["targets", "campaign"] and targets[0].name in steps[0].why
    # an H100 has timed some targets: an H200 leaves the rest to H100s
    assert [s.name for s in lease.plan_lease("gpu", None, tmp_path, tag="h200", targets=targets)] == ["campaign"]
    (bench / "efficiency.gpu.h100.json").rename(bench / "efficiency.gpu.a100.json")
    assert "targets" in [s.name for s in lease.plan_lease("gpu", None, tmp_path, tag="h200", targets=targets)]  # no H100 has
    (bench / "efficiency.gpu.a100.json").unlink()
    (bench / "efficiency.gpu.h100.json").write_text(json.dumps({"rows": rows}))
    assert [s.name for s in lease.plan_lease("gpu", ["gau-length"], tmp_path, tag="h100", targets=targets)] == ["campaign"]
    queue = tmp_path / "queue.json"
    queue.write_text("{}")
    steps = lease.plan_lease("gpu", None, tmp_path, tag="h100", queue=queue, targets=targets)
    assert [s.name for s in steps] == ["campaign"] and steps[0].argv[-2:] == ("--queue", str(queue))
    steps = lease.plan_lease("gpu", ["gau-length"], tmp_path, tag="h100", queue=queue, targets=targets)
    assert steps[0].argv[-2:] == ("--only", "gau-length")  # a selection runs without the queue
    (bench / "efficiency.gpu.h100.json").unlink()
    assert [s.name for s in lease.plan_lease("gpu", None, tmp_path, tag="h100")] == ["campaign"]  # none given
    with pytest.raises(ValueError, match="only must name experiments"):
        lease.plan_lease("smoke", ["no-such-experiment"], tmp_path)


def test_the_deadline_comes_from_the_limit_the_command_runs_under():
    """A 540 s command whose machine start took 100 s of it has 540 - 100 - END_S left, not a fixed 9 minutes; a
    limit already spent, or a start in the future, is refused naming its argument."""
    now = 1_000_000.0
    assert lease.lease_deadline(540, now - 100, now) == pytest.approx(540 - 100 - lease.END_S)
    assert lease.lease_deadline(540, None, now) == pytest.approx(540 - lease.END_S)
    with pytest.raises(ValueError, match="limit must leave more than"):
        lease.lease_deadline(540, now - 530, now)
    with pytest.raises(ValueError, match="limit must be a positive"):
        lease.lease_deadline(float("nan"), None, now)
    with pytest.raises(ValueError, match="started-at must not be in the future"):
        lease.lease_deadline(540, now + 60, now)


def _results(root: Path, files: dict[str, object]) -> None:
    for name, doc in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(json.dumps(doc))


def test_new_and_changed_files_are_packed_and_taken_in_elsewhere(tmp_path):
    device, here, out = tmp_path / "device", tmp_path / "here", tmp_path / "out"
    _results(device, {"a.cpu.json": {"x": 1}, "trials/a.gpu/t0.json": {"y": 0}})
    before = lease.snapshot(device)
    _results(device, {"trials/a.gpu/t0.json": {"y": 1}, "trials/a.gpu/t1.json": {"y": 2},
                      "benchmarks/steptimes.gpu.h100.json": {"rows": []}})
    (device / "trials" / "a.gpu" / "t2.json.123.tmp").write_text("half")
    changed = lease.changed_files(device, before)
    assert changed == ["benchmarks/steptimes.gpu.h100.json", "trials/a.gpu/t0.json", "trials/a.gpu/t1.json"]
    out.mkdir()
    assert [p.name for p in lease.pack(device, changed, out)] == [lease.ARCHIVE]
    _results(here, {"trials/a.gpu/t0.json": {"y": 0}, "trials/a.gpu/t1.json": {"y": 2}})
    report = lease.unpack([out / lease.ARCHIVE], here)
    assert report.added == ["benchmarks/steptimes.gpu.h100.json"]
    assert report.replaced == ["trials/a.gpu/t0.json"] and report.same == ["trials/a.gpu/t1.json"]
    for name in changed:
        assert (here / name).read_bytes() == (device / name).read_bytes()
    assert lease.pack(device, [], out) == []


def test_archives_split_to_fit_what_a_command_brings_back(tmp_path):
    rng = __import__("random").Random(0)
    files = {f"trials/x.gpu/t{i}.json": {"noise": [rng.random() for _ in range(400)]} for i in range(6)}
    _results(tmp_path / "r", files)
    one = len(lease._tar_gz(tmp_path / "r", ["trials/x.gpu/t0.json"]))
    out = tmp_path / "out"
    out.mkdir()
    paths = lease.pack(tmp_path / "r", sorted(files), out, max_bytes=3 * one)
    assert len(paths) >= 2 and all(p.stat().st_size <= 3 * one for p in paths)
    assert paths[1].name == "lease-results.2.tar.gz"
    report = lease.unpack(paths, tmp_path / "back")
    assert sorted(report.added) == sorted(files)
    with pytest.raises(lease.LeaseError, match="do not fit"):
        lease.pack(tmp_path / "r", sorted(files), out, max_bytes=one // 4)


def _archive(path: Path, members: list[tuple[str, bytes, bytes]]) -> Path:
    with tarfile.open(path, "w:gz") as tar:
        for name, data, kind in members:
            info = tarfile.TarInfo(name)
            info.type, info.size = kind, len(data) if kind == tarfile.REGTYPE else 0
            if kind == tarfile.SYMTYPE:
                info.linkname = "/etc/passwd"
            tar.addfile(info, io.BytesIO(data) if kind == tarfile.REGTYPE else None)
    return path


@pytest.mark.parametrize("name, data, kind, why", [
    ("elsewhere/a.json", b"{}", tarfile.REGTYPE, "is not a results/ JSON file"),
    ("results/../../a.json", b"{}", tarfile.REGTYPE, "is not a results/ JSON file"),
    ("/results/a.json", b"{}", tarfile.REGTYPE, "is not a results/ JSON file"),
    ("results/a.txt", b"{}", tarfile.REGTYPE, "is not a results/ JSON file"),
    ("results/a.json", b"", tarfile.SYMTYPE, "is not a results/ JSON file"),
    ("results/a.json", b"{half", tarfile.REGTYPE, "is not JSON"),
])
def test_unpack_refuses_a_member_and_writes_nothing(tmp_path, name, data, kind, why):
    bad = _archive(tmp_path / "bad.tar.gz", [("results/good.json", b"{}", tarfile.REGTYPE), (name, data, kind)])
    with pytest.raises(lease.LeaseError, match=why):
        lease.unpack([bad], tmp_path / "here")
    assert not (tmp_path / "here").exists()
    (tmp_path / "plain.tar.gz").write_bytes(b"not a tar")
    with pytest.raises(lease.LeaseError, match="not a lease archive"):
        lease.unpack([tmp_path / "plain.tar.gz"], tmp_path / "here")


@pytest.mark.slow
def test_a_lease_runs_its_steps_within_its_limit_and_packs_what_they_made(tmp_path):
    results, out = tmp_path / "results", tmp_path / "out"
    summary = lease.run_lease(120.0, out, "smoke", ["entropy-bound"], results, lease_dir=tmp_path / "nothing")
    assert [(s.name, s.returncode) for s in summary.steps] == [("campaign", 0)]
    assert summary.seconds < 120.0 and summary.archives == [lease.ARCHIVE]
    assert any(f.startswith("trials/entropy-bound.smoke/") for f in summary.files)
    assert "entropy-bound.smoke.json" in summary.files  # the record, assembled once every trial was stored
    written = json.loads((out / lease.SUMMARY).read_text())
    assert written["files"] == summary.files and written["scale"] == "smoke" and written["limit_s"] == 120.0
    back = lease.unpack([out / lease.ARCHIVE], tmp_path / "here")
    assert sorted(back.added) == sorted(summary.files)
    for name in summary.files:
        assert (tmp_path / "here" / name).read_bytes() == (results / name).read_bytes()
    again = lease.run_lease(120.0, tmp_path / "out2", "smoke", ["entropy-bound"], results,
                            lease_dir=tmp_path / "nothing")
    assert again.files == [] and again.archives == []  # nothing left to run, nothing new to bring back


@pytest.mark.slow
def test_a_prepared_queue_runs_in_its_order_and_a_second_command_continues(tmp_path):
    """The queue travels in the lease folder; the device runs it without counting anything. A command cut short (here
    by a deadline that fits a few trials) leaves its trials packed; taken in, they make the next command start
    where the first stopped."""
    from analysis.compute.queue import build_queue, load_queue, save_queue

    carried, device = tmp_path / "lease", tmp_path / "device"
    queue = build_queue("smoke", "h100", ["gau-length"], device)
    save_queue(queue, carried / lease.QUEUE, "smoke", "h100")
    prepared = load_queue(carried / lease.QUEUE)
    assert (prepared.scale, prepared.device, prepared.trials) == ("smoke", "h100", queue)
    first = lease.run_lease(120.0, tmp_path / "out1", "smoke", None, device, lease_dir=carried)
    assert [s.name for s in first.steps] == ["campaign"] and "--queue" in first.steps[0].argv
    stored = sorted(Path(f).name for f in first.files if f.startswith("trials/"))
    assert stored == sorted(f"{q.key}.{q.trial_id}.json" for q in queue)
    report = lease.unpack([tmp_path / "out1" / lease.ARCHIVE], tmp_path / "here")
    assert lease.assemble_taken_in(report, tmp_path / "here") == ["gau-length (smoke): every trial stored; "
                                                                  "record assembled"]
    second = lease.run_lease(120.0, tmp_path / "out2", "smoke", None, device, lease_dir=carried)
    assert not any(f.startswith("trials/") for f in second.files)  # every queued trial is stored: none runs again


@pytest.mark.slow
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_a_lease_killed_at_any_moment_loses_no_finished_trial(tmp_path, seed):
    """The whole path on this CPU: prepare, run under a limit, SIGKILL the lease and its campaign at a random
    moment, unpack elsewhere: every trial stored before the kill came back byte for byte, but at most the newest,
    whose packing the kill can cut."""
    from analysis.compute.rehearse import rehearse

    result = rehearse(workdir=tmp_path, seed=seed, window_s=(4.0, 16.0))
    assert result.ok, "\n".join(result.lines())
    assert result.summary_ok and len(result.missing) <= 1


def test_a_rehearsal_finds_a_trial_that_did_not_come_back(tmp_path):
    from analysis.compute.rehearse import Rehearsal

    r = Rehearsal(5.0, stored={"trials/a/x.json": b"1", "trials/a/y.json": b"2"}, newest="trials/a/y.json",
                  taken={"trials/a/y.json": b"2"}, summary_ok=True)
    assert not r.ok and r.lost == ["trials/a/x.json"] and "LOST: trials/a/x.json" in r.lines()
    r.taken = {"trials/a/x.json": b"1"}
    assert r.ok and r.missing == ["trials/a/y.json"]  # the newest: in flight
    r.taken = {"trials/a/x.json": b"changed"}
    assert not r.ok and r.differing == ["trials/a/x.json"]


def test_the_lease_script_passes_its_limit_and_keeps_a_log(tmp_path):
    env = {**os.environ, "OUT": str(tmp_path / "out"), "PYTHON": sys.executable,
           "ANALYSIS_RESULTS_DIR": str(tmp_path / "results")}
    done = subprocess.run(["bash", str(REPO_ROOT / "scripts" / "lease.sh"), "25s", "--scale", "smoke", "--only",
                           "entropy-bound"], check=False, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 2, done.stdout + done.stderr  # a limit below start-up and packing is refused
    assert "--limit must leave more than" in (tmp_path / "out" / "lease.log").read_text()


@pytest.mark.parametrize("argv, why", [
    (["lease", "run", "--scale", "smoke"], "needs --out"),
    (["lease", "run", "--out", "x", "--limit", "10s"], "--limit must leave more than"),
    (["lease", "run", "--out", "x", "--limit", "soon"], "--limit"),
    (["lease", "unpack"], "needs the path"),
    (["lease", "unpack", "missing.tar.gz"], "no such archive"),
    (["lease", "prepare", "--limit", "9m"], "apply only to 'lease run'"),
    (["lease", "run", "--out", "x", "--device", "h200"], "--device applies only"),
    (["lease", "plan", "--kill-after", "3"], "--kill-after applies only"),
    (["lease", "plan", "--only", "no-such-experiment"], "no-such-experiment"),
    (["lease", "plan", "x.tar.gz"], "takes no archive paths"),
])
def test_cli_refuses_with_one_line(argv, why, capsys):
    from analysis.cli.main import main

    assert main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and why in err[0]


def test_cli_plans_and_unpacks(tmp_path, capsys):
    from analysis.cli.main import main

    assert main(["lease", "plan", "--scale", "smoke", "--only", "gau-length", "--leases", "1"]) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    assert lines[0].startswith("campaign: python -m analysis campaign --scale smoke --only gau-length")
    assert lines[2].startswith("lease 1 on one H100:") and "gau-length relu2-length-text" in lines[2]
    _results(tmp_path / "dev", {"trials/a.gpu/t.json": {"y": 1}})
    (tmp_path / "out").mkdir()
    lease.pack(tmp_path / "dev", ["trials/a.gpu/t.json"], tmp_path / "out")
    assert main(["lease", "unpack", str(tmp_path / "out" / lease.ARCHIVE)]) == 0
    assert capsys.readouterr().out.strip().splitlines() == ["added: results/trials/a.gpu/t.json",
                                                            "1 added, 0 replaced, 0 already here",
                                                            "a: no such experiment here; its trial files are kept"]
    assert json.loads((tmp_path / "results" / "trials" / "a.gpu" / "t.json").read_text()) == {"y": 1}


def test_a_source_stamp_gives_the_commit_and_whether_the_copied_files_differ(tmp_path, monkeypatch):
    """A device's copy of the checkout may hold another commit's .git: records made there take the commit from the
    stamp written here, and are dirty exactly when a stamped file's bytes differ."""
    from analysis.core import results

    assert results.blob_sha(b"hello\n") == "ce013625030ba8dba906f756967f9e9ca394464a"  # git hash-object's name
    stamp = results.write_source_stamp(tmp_path / "source.json")
    assert stamp["commit"] == results._git("rev-parse", "HEAD") and "README.md" in stamp["blobs"]
    assert not any(name.startswith("results/") for name in stamp["blobs"])
    (tmp_path / "a.txt").write_bytes(b"hello\n")
    (tmp_path / "link").symlink_to("a.txt")
    fake = {"commit": "f" * 40, "blobs": {"a.txt": ["100644", results.blob_sha(b"hello\n")],
                                          "link": ["120000", results.blob_sha(b"a.txt")]}}
    assert not results.stamp_differs(fake, tmp_path)
    (tmp_path / "a.txt").write_bytes(b"hello!\n")
    assert results.stamp_differs(fake, tmp_path)
    path = tmp_path / "stamp.json"
    path.write_text(json.dumps({"commit": "f" * 40, "blobs": {"README.md": ["100644", "0" * 40]}}))
    monkeypatch.setenv(results.SOURCE_ENV, str(path))
    assert results.git_commit() == "f" * 40 and results.tree_dirty() is True
    readme = (results.REPO_ROOT / "README.md").read_bytes()
    path.write_text(json.dumps({"commit": "f" * 40, "blobs": {"README.md": ["100644", results.blob_sha(readme)]}}))
    assert results.tree_dirty() is False
