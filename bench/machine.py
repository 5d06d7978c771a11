"""What machine and software the numbers were measured on."""

from __future__ import annotations

import os
import platform
import subprocess
from importlib import metadata
from pathlib import Path
from typing import Any

PACKAGES = ("langgraph", "langchain-core", "fastapi", "uvicorn", "pydantic", "aiosqlite")


def code_revision(root: Path) -> str:
    """The commit the checkout at `root` is at (short), with "+" when a tracked file differs
    from it; "unknown" where git or the repository is not there."""
    try:
        head = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], cwd=root, capture_output=True, text=True
        )
        changed = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no"],
            cwd=root,
            capture_output=True,
            text=True,
        )
    except OSError:
        return "unknown"
    if head.returncode != 0 or not head.stdout.strip():
        return "unknown"
    return head.stdout.strip() + ("+" if changed.stdout.strip() else "")


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def _mem_total_gib() -> float:
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                return int(line.split()[1]) / 1024 / 1024
    except OSError:
        pass
    return float("nan")


def describe() -> dict[str, Any]:
    """CPU, cores, memory, OS, Python, the load average and the versions of the packages that
    matter here."""
    versions = {}
    for name in PACKAGES:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = "absent"
    return {
        "cpu": _cpu_model(),
        "cores": os.cpu_count(),
        "memory_gib": round(_mem_total_gib(), 1),
        "os": f"{platform.system()} {platform.release()}",
        "python": platform.python_version(),
        # Other work shares the cores: the 1-minute load average when the benchmarks ended.
        "load_average": round(os.getloadavg()[0], 1),
        "packages": versions,
    }
