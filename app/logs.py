"""Logging for every `lats` command: one stderr handler on the root logger and the levels it
lets through, configured once at start-up (`configure`).

The libraries' records stay at WARNING unless asked for (`-v`: INFO, `-vv`: DEBUG): an SDK
logs a line or two per model call. plantree's own INFO lines (`agents`, `app`, `calls`,
`tools`) are a service's log and shown by `serve`, `worker` and `mcp`; a person's command
(`solve`, `runs`, `show`) holds them back too unless `-v`, and also the tools' give-up
warnings, which its tree already shows as failed tool calls.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Mapping
from dataclasses import dataclass

FORMAT = "%(asctime)s %(levelname)s %(name)s %(message)s"
OWN = ("agents", "app", "calls", "tools")
# A service's web server speaks for the service: its "running on" line and access log.
SERVICE_OWN = (*OWN, "uvicorn")
# Logs a line per tool call that gave up; `solve` shows each as `⚙ name(...) failed (kind)`.
TOOL_RETRIES = "tools.runtime"


@dataclass(frozen=True)
class Levels:
    """The least level let through for a logger: that of the longest name in `by_name` that
    is the logger's own name or an ancestor's, else `default`."""

    default: int
    by_name: Mapping[str, int]

    def of(self, name: str) -> int:
        while name:
            if name in self.by_name:
                return self.by_name[name]
            name = name.rpartition(".")[0]
        return self.default

    def least(self) -> int:
        return min([self.default, *self.by_name.values()])


def levels_for(verbosity: int, *, service: bool) -> Levels:
    """The levels of a command given `-v` `verbosity` times; `service`: a long-running process
    (`serve`, `worker`, `mcp`), whose own INFO lines are shown without `-v`."""
    if verbosity >= 2:
        return Levels(logging.DEBUG, {})
    if verbosity == 1:
        return Levels(logging.INFO, {})
    if service:
        return Levels(logging.WARNING, dict.fromkeys(SERVICE_OWN, logging.INFO))
    return Levels(logging.WARNING, {TOOL_RETRIES: logging.ERROR})


class _ByName(logging.Filter):
    def __init__(self, levels: Levels) -> None:
        super().__init__()
        self.levels = levels

    def filter(self, record: logging.LogRecord) -> bool:
        return record.levelno >= self.levels.of(record.name)


class StderrHandler(logging.Handler):
    """Writes to whatever `sys.stderr` is when a record comes: a live progress display may
    stand in for it while it is drawn, and the records then print above it."""

    def emit(self, record: logging.LogRecord) -> None:
        try:
            sys.stderr.write(self.format(record) + "\n")
            sys.stderr.flush()
        except Exception:  # logging's own contract: report through handleError, never raise
            self.handleError(record)


def configure(verbosity: int, *, service: bool) -> Levels:
    """Install (or re-level) the one stderr handler on the root logger; the levels in force.

    The levels are a filter on the handler rather than logger levels because some libraries
    set their own logger's level on import (bm25s: DEBUG)."""
    levels = levels_for(verbosity, service=service)
    root = logging.getLogger()
    handler = next((h for h in root.handlers if isinstance(h, StderrHandler)), None)
    if handler is None:
        handler = StderrHandler()
        handler.setFormatter(logging.Formatter(FORMAT))
        root.addHandler(handler)
    for old in [f for f in handler.filters if isinstance(f, _ByName)]:
        handler.removeFilter(old)
    handler.addFilter(_ByName(levels))
    root.setLevel(levels.least())
    return levels
