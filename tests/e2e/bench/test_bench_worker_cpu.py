"""Smoke variant of the worker CPU benchmark: `python -m bench.worker_cpu --against DIR` with
this checkout on both sides, 2 clients for 2 s, one pair, on the local Postgres and Redis.
Checks the shape of the results and that each side's runs were counted, never timings."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.process import ROOT
from bench.speed_report import worker_cpu_closing, worker_cpu_section
from bench.worker_cpu import WorkerCpuConfig, run_worker_cpu
from bench.workers import WorkersConfig

pytestmark = pytest.mark.timeout(300)


@pytest.mark.usefixtures("postgres_url", "redis_url")
async def test_a_worker_is_measured_beside_another_checkout(tmp_path: Path) -> None:
    load = WorkersConfig(clients=2, duration_s=2.0, ramp_s=0.2)
    out = await run_worker_cpu(WorkerCpuConfig(load=load, pairs=1, against=ROOT), tmp_path)

    for side in (out["this"], out["against"]):
        assert side["worker_cpu_ms_per_run"]["median"] > 0
        assert side["transactions_per_run"]["median"] > 0
        assert side["redis_commands_per_run"]["median"] > 0
    assert out["runs"][0] > 0
    assert out["against"]["runs"][0] > 0
    assert out["against"]["ratio"]["n"] == 1
    assert out["against"]["ratio"]["median"] > 0
    page = "\n".join(worker_cpu_section(out))
    assert page.startswith("## 16. A worker's CPU per run")
    assert "| this checkout | " in page
    assert f"| `{ROOT.name}` | " in page
    assert "Ratio within each pair" in page
    assert worker_cpu_closing(out)[0].startswith("- A worker's CPU per run")
