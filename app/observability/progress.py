"""Run events folded into a compact progress report: one short line per notable event plus the
counts so far (nodes run, paths completed, stage). Shared by the OpenAI-compatible stream and
the MCP server's progress notifications. Pure: no I/O."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from agents.state import Source

Stage = Literal["queued", "planning", "searching", "voting", "done", "failed", "cancelled"]

_STEP_CHARS = 80


def _short(text: str, limit: int = _STEP_CHARS) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


@dataclass
class Progress:
    """What a client is told about a run so far."""

    max_paths: int = 0
    stage: Stage = "queued"
    nodes_run: int = 0
    paths_completed: int = 0
    steps: dict[str, str] = field(default_factory=dict)

    def update(self, kind: str, data: dict[str, Any]) -> str | None:
        """Fold one event (its `type` and JSON body); the line to show, or None for events
        not worth a line."""
        handler = getattr(self, f"_on_{kind}", None)
        line: str | None = handler(data) if handler is not None else None
        return line

    @property
    def counts(self) -> str:
        return (
            f"{self.nodes_run} steps run, "
            f"{self.paths_completed}/{self.max_paths or '?'} paths complete"
        )

    # -- one method per event type ----------------------------------------------------------
    def _on_run_started(self, data: dict[str, Any]) -> str:
        self.max_paths = int(data.get("params", {}).get("max_paths", 0))
        self.stage = "planning"
        return "planning…"

    def _on_plan(self, data: dict[str, Any]) -> str:
        self.stage = "searching"
        root = data.get("root") or {}
        if root:
            self.steps[root["node_id"]] = root["step"]
        return f"plan: {len(data.get('steps', []))} steps"

    def _on_candidates(self, data: dict[str, Any]) -> str | None:
        for node in data.get("nodes", []):
            self.steps[node["node_id"]] = node["step"]
        if data.get("complete"):
            return None  # the path's answer line follows
        count = len(data.get("nodes", []))
        if not count:
            return None
        return f"{data['parent_id']}: {count} next step{'s' if count > 1 else ''} proposed"

    def _on_node_started(self, data: dict[str, Any]) -> str:
        node_id = data["node_id"]
        return f"{node_id} ▸ {_short(self.steps.get(node_id, ''))}".rstrip()

    def _on_node_finished(self, data: dict[str, Any]) -> str:
        self.nodes_run += 1
        tools = int(data.get("tool_calls", 0))
        detail = f", {tools} tool call{'s' if tools != 1 else ''}" if tools else ""
        return f"{data['node_id']} {data['status']}{detail} · {self.counts}"

    def _on_pruned(self, data: dict[str, Any]) -> str:
        return f"{data['node_id']} pruned: {_short(str(data.get('reason', '')))}"

    def _on_path_completed(self, data: dict[str, Any]) -> str:
        self.paths_completed += 1
        return f"path complete at {data['node_id']} · {self.counts}"

    def _on_vote(self, data: dict[str, Any]) -> str:
        self.stage = "voting"
        return (
            f"chose {data['chosen_id']} among {len(data.get('candidates', []))} ({data['method']})"
        )

    def _on_done(self, data: dict[str, Any]) -> str:
        self.stage = "done"
        return f"done ({data.get('stop_reason')})"

    def _on_error(self, data: dict[str, Any]) -> str:
        self.stage = "failed"
        return f"failed: {data.get('message', '')}"

    def _on_cancelled(self, data: dict[str, Any]) -> str:
        self.stage = "cancelled"
        return "cancelled"


def with_sources(answer: str, sources: Sequence[Source]) -> str:
    """The answer followed by its sources as a numbered Markdown list (none: the answer)."""
    if not sources:
        return answer
    lines = [f"{i}. [{s['title'] or s['url']}]({s['url']})" for i, s in enumerate(sources, 1)]
    return answer.rstrip() + "\n\nSources:\n" + "\n".join(lines)
