"""Run one of the benchmarks (`python -m bench`), in smoke size or as a test asks, and read its
results."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from bench.__main__ import main


def run_bench(name: str, tmp_path: Path, *options: str) -> tuple[int, Path]:
    """`bench --only name *options`, its results and docs (`b.md`) written to a folder below
    `tmp_path`: the exit code, and that folder."""
    out = tmp_path / "results"
    argv = ["--only", name, *options, "--results", str(out), "--docs", str(out / "b.md")]
    return main(argv), out


def smoke_results(name: str, tmp_path: Path) -> tuple[dict[str, Any], str]:
    """`bench --only name --smoke`, its results and docs written below `tmp_path`: what it
    wrote to `<name>.json`, and the benchmarks page it wrote."""
    code, out = run_bench(name, tmp_path, "--smoke")
    assert code == 0
    data: dict[str, Any] = json.loads((out / f"{name}.json").read_text())
    return data, (out / "b.md").read_text()
