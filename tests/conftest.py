"""Shared fixtures: every test runs at smoke scale with results and claims in temporary folders."""

import pytest


@pytest.fixture(autouse=True)
def _isolated(monkeypatch, tmp_path):
    monkeypatch.setenv("ANALYSIS_SCALE", "smoke")
    monkeypatch.setenv("ANALYSIS_RESULTS_DIR", str(tmp_path / "results"))
    monkeypatch.delenv("ANALYSIS_CLAIMS_DIR", raising=False)
