"""open_chapter: live run, recorded runs with staleness, claims and GPU status in one call."""

import dataclasses

from analysis.chapter import open_chapter, runs_for
from analysis.experiments import EXPERIMENTS, config_for, fingerprint
from analysis.results import Record, provenance, save_record


def _record(name, scale, cfg, fp):
    return Record(name, scale, 0, dataclasses.asdict(cfg), EXPERIMENTS[name].run(EXPERIMENTS[name].CONFIGS["smoke"]),
                  provenance(1.0), fp)


def test_open_chapter_shows_live_then_records_and_marks_stale(tmp_path, capsys):
    module = EXPERIMENTS["ffn-basics"]
    cpu = config_for(module, "cpu")
    save_record(_record("ffn-basics", "cpu", cpu, fingerprint(module, cpu)), tmp_path)
    ch = open_chapter("demo", "Demo", "ffn-basics", directory=str(tmp_path))
    runs = ch.runs["ffn-basics"]
    assert [r.key for r in runs] == ["smoke", "recorded-cpu"] and runs[1].stale == ()
    assert ch.best("ffn-basics").key == "recorded-cpu" and ch.live("ffn-basics").key == "smoke"
    keys = {c.key for c in ch.claims.claims}
    assert any(k.endswith("-smoke") for k in keys) and any(k.endswith("-recorded-cpu") for k in keys)
    assert "ffn-basics: this build: smoke scale" in capsys.readouterr().out
    status = ch.gpu_status("ffn-basics").data
    assert "No GPU-scale run" in status and "H100" in status and "python -m analysis run ffn-basics --scale gpu" in status

    gpu = config_for(module, "gpu")
    stale = _record("ffn-basics", "gpu", gpu, {**fingerprint(module, gpu), "code": "0" * 16})
    save_record(stale, tmp_path)
    runs = runs_for("ffn-basics", "smoke", {}, 0.0, str(tmp_path))
    assert runs[-1].key == "recorded-gpu" and runs[-1].label == "recorded, gpu scale (stale)"
    assert "STALE: the experiment's code has changed since" in runs[-1].note
