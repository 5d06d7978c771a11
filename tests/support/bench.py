"""Run one of the benchmarks (`python -m bench`) in smoke size and read its results."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from bench.__main__ import main


def smoke_results(name: str, tmp_path: Path) -> tuple[dict[str, Any], str]:
    """`bench --only name --smoke`, its results and docs written below `tmp_path`: what it
    wrote to `<name>.json`, and the benchmarks page it wrote."""
    out = tmp_path / "results"
    argv = ["--only", name, "--smoke", "--results", str(out), "--docs", str(out / "b.md")]
    assert main(argv) == 0
    data: dict[str, Any] = json.loads((out / f"{name}.json").read_text())
    return data, (out / "b.md").read_text()
