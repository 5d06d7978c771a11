"""Terminal rendering of a run's events: the tree as it grows, tool calls, and the answer."""

from __future__ import annotations

from typing import Any, TextIO


class TreePrinter:
    """Prints one line per tree change, indented by depth, then the answer and costs."""

    def __init__(self, out: TextIO) -> None:
        self.out = out
        self.depth: dict[str, int] = {}
        self.steps: dict[str, str] = {}

    def _line(self, depth: int, text: str) -> None:
        self.out.write("  " * (depth + 1) + text + "\n")
        self.out.flush()

    def _brief(self, node: dict[str, Any]) -> None:
        self.depth[node["node_id"]] = node["depth"]
        self.steps[node["node_id"]] = node["step"]

    def handle(self, event: dict[str, Any]) -> None:
        """Render one event (as the JSON object of docs/events.md)."""
        kind = event.get("type")
        node_id = event.get("node_id", "")
        depth = self.depth.get(node_id, 0)
        if kind == "run_started":
            self.out.write(f"run {event['run_id']}\n")
        elif kind == "plan":
            self.out.write("plan:\n")
            for index, step in enumerate(event["steps"], start=1):
                self.out.write(f"  {index}. {step}\n")
            self._brief(event["root"])
        elif kind == "node_started":
            self._line(depth, f"▶ {node_id} {self.steps.get(node_id, '')}")
        elif kind == "tool_call":
            args = ", ".join(f"{k}={v!r}" for k, v in event["args"].items())
            status = "ok" if event["ok"] else f"failed ({event.get('error_kind')})"
            self._line(depth + 1, f"⚙ {event['name']}({args}) {status} {event['seconds']:.1f}s")
        elif kind == "node_finished":
            mark = {"done": "✓", "failed": "✗"}.get(event["status"], "·")
            detail = f": {event['error']}" if event.get("error") else ""
            secs = f" {event['seconds']:.1f}s" if event.get("seconds") is not None else ""
            self._line(depth, f"{mark} {node_id} {event['status']}{secs}{detail}")
        elif kind == "candidates":
            for node in event["nodes"]:
                self._brief(node)
            parent_depth = self.depth.get(event["parent_id"], 0)
            if event["complete"]:
                self._line(parent_depth, f"■ {event['parent_id']} ends its path")
            else:
                children = ", ".join(f"{n['node_id']} {n['step']!r}" for n in event["nodes"])
                self._line(parent_depth, f"↳ next: {children}")
        elif kind == "pruned":
            self._line(depth, f"✂ {node_id} pruned: {event['reason']}")
        elif kind == "path_completed":
            self._line(depth, f"★ path {' → '.join(event['path'])} has an answer")
        elif kind == "vote":
            self.out.write(f"vote: {event['chosen_id']} ({event['method']})\n")
        elif kind == "done":
            self._done(event)
        elif kind == "error":
            self.out.write(f"error ({event['code']}): {event['message']}\n")
        elif kind == "cancelled":
            self.out.write("cancelled\n")
        self.out.flush()

    def _done(self, event: dict[str, Any]) -> None:
        partial = " (partial)" if event.get("partial") else ""
        self.out.write(f"\nanswer{partial}:\n{event['answer']}\n")
        self.out.write(footnotes(event))
        if event.get("sources"):
            self.out.write("\nsources:\n")
            for source in event["sources"]:
                self.out.write(f"  - {source['title']}: {source['url']}\n")
        metrics = event.get("metrics", {})
        self.out.write(
            f"\nstop: {event['stop_reason']} · model calls {metrics.get('llm_calls', 0)}"
            f" · tokens {metrics.get('input_tokens', 0)}+{metrics.get('output_tokens', 0)}"
            f" · tool calls {metrics.get('tool_calls', 0)}"
            f" · {metrics.get('wall_s', 0):.1f}s\n"
        )


def footnotes(run: dict[str, Any]) -> str:
    """The answer's verified citations as footnotes (`[n] "quote" — title, url`), then its
    groundedness and the sentences no verified quote backs; "" for a run without citations."""
    citations = run.get("citations") or []
    grounded = run.get("groundedness")
    if not citations and grounded is None:
        return ""
    lines = [""]
    for cited in citations:
        source = cited["source"]
        where = f"{source['title']}, {source['url']}" if source.get("url") else source["title"]
        lines.append(f'  [{cited["marker"]}] "{cited["quote"]}" — {where}')
    if grounded is not None:
        lines.append(f"  groundedness {grounded:.2f} (sentences backed by a verified quote)")
    for sentence in run.get("unsupported") or []:
        lines.append(f"  unsupported: {sentence}")
    rejected = run.get("rejected") or []
    if rejected:
        lines.append(f"  {len(rejected)} citation(s) rejected: their quote is not in the evidence")
    return "\n".join(lines) + "\n"
