"""A share of the CPU for one benchmark process, by a Linux cgroup with a CFS quota.

On a 2-core machine the API process, the workers, Postgres, Redis and the benchmark's clients
all share the same two cores, so "two workers against one" measures the machine as much as
the service. Giving each worker process a fixed share (say 0.4 of a core, as it would have on
a machine slice of its own) keeps the rest of the deployment off the workers' budget: the
speed-up then says whether the second worker's work is held back by anything shared (the
store, Redis, the API process) rather than by the cores.

The quota is spent in 10 ms periods, not the default 100 ms, so a throttled worker pauses for
milliseconds, not for a tenth of a second. Needs root and the cpu controller (cgroup v1's
`/sys/fs/cgroup/cpu`, or v2 with `cpu` in `cgroup.controllers`); `unavailable()` says why not.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path

logger = logging.getLogger(__name__)

PERIOD_US = 10_000
_V1 = Path("/sys/fs/cgroup/cpu")
_V2 = Path("/sys/fs/cgroup")


def _root() -> tuple[Path, int] | None:
    """The cgroup directory groups are made in, and its version."""
    if (_V1 / "cpu.cfs_quota_us").exists():
        return _V1, 1
    controllers = _V2 / "cgroup.controllers"
    if controllers.exists() and "cpu" in controllers.read_text().split():
        return _V2, 2
    return None


def unavailable() -> str | None:
    """Why no share can be set here, or None when one can."""
    root = _root()
    if root is None:
        return "no cgroup cpu controller on this machine"
    if not os.access(root[0], os.W_OK):
        return f"{root[0]} is not writable (root is needed)"
    return None


class CpuShare:
    """`cpus` of a core for the processes `add`ed; `close` removes the group."""

    def __init__(self, name: str, cpus: float) -> None:
        root = _root()
        if root is None:
            raise OSError("no cgroup cpu controller on this machine")
        self._root, self._version = root
        self.path = self._root / name
        self.path.mkdir(exist_ok=True)
        quota = max(1000, round(cpus * PERIOD_US))
        if self._version == 1:
            (self.path / "cpu.cfs_period_us").write_text(str(PERIOD_US))
            (self.path / "cpu.cfs_quota_us").write_text(str(quota))
        else:
            (self.path / "cpu.max").write_text(f"{quota} {PERIOD_US}")

    def add(self, pid: int) -> None:
        """Move process `pid` (every thread of it) into the group."""
        (self.path / "cgroup.procs").write_text(str(pid))

    def throttled_s(self) -> float:
        """How long the group has been held back by its quota so far."""
        stat = dict(
            line.split() for line in (self.path / "cpu.stat").read_text().splitlines() if line
        )
        if self._version == 1:
            return int(stat.get("throttled_time", 0)) / 1e9
        return int(stat.get("throttled_usec", 0)) / 1e6

    def close(self) -> None:
        """Hand any process still in the group back to the root group, and remove it."""
        try:
            for pid in (self.path / "cgroup.procs").read_text().split():
                (self._root / "cgroup.procs").write_text(pid)
            self.path.rmdir()
        except OSError as e:
            logger.warning("cgroup %s not removed: %s", self.path, e)
