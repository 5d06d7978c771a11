"""The quota sweep benchmark end to end at a tiny size: it goes through the real Gemini client
and the call policy, and reports the shares from the simulator's own counters (shape only; the
figures themselves are the benchmark's business)."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.quota import QuotaConfig, run_quota, summary

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(120)]


async def test_the_quota_sweep_reports_used_and_rejected_shares(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GOOGLE_API_KEY", "simulated-key")
    monkeypatch.setenv("GOOGLE_GEMINI_BASE_URL", "http://127.0.0.1:9")  # replaced per point
    config = QuotaConfig(quotas_rps=(30.0,), runs=2, low_s=0.005, high_s=0.01, max_paths=2)

    data = await run_quota(config, tmp_path)

    (point,) = data["points"]
    assert point["runs_done"] == 2
    assert 0 < point["used"]["median"] <= 1.5
    assert 0 <= point["rejected"]["median"] < 1
    (rep,) = point["reps"]
    assert rep["llm_calls"] > 0
    assert len(summary(data)) == 1
