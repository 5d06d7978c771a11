"""Terminal rendering of a run's events: the tree as it grows, tool calls, and the answer
(`TreePrinter`); on a terminal, under a live progress line (`LiveTree`); or the events as
JSON Lines (`JsonLines`)."""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable
from types import TracebackType
from typing import Any, Protocol, TextIO

from rich.console import Console
from rich.file_proxy import FileProxy
from rich.live import Live
from rich.spinner import Spinner
from rich.text import Text

from agents.events import TERMINAL_TYPES


class Output(Protocol):
    """Where rendered text goes: a text stream (`sys.stdout`, `io.StringIO`, …)."""

    def write(self, text: str, /) -> int: ...

    def flush(self) -> None: ...


class Renderer(Protocol):
    """Shows a run's events as they come (each the JSON object of docs/events.md)."""

    def handle(self, event: dict[str, Any]) -> None: ...


class JsonLines:
    """Every event as one line of JSON, and nothing else."""

    def __init__(self, out: TextIO) -> None:
        self.out = out

    def handle(self, event: dict[str, Any]) -> None:
        self.out.write(json.dumps(event, ensure_ascii=False, separators=(",", ":")) + "\n")
        self.out.flush()


class TreePrinter:
    """Prints one line per tree change, indented by depth, then the answer and costs."""

    def __init__(self, out: Output) -> None:
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
        elif kind in ("pruned", "revived"):
            mark = "✂" if kind == "pruned" else "↺"
            self._line(depth, f"{mark} {node_id} {kind}: {event['reason']}")
        elif kind == "interrupt":
            self.out.write(f"the plan waits for approval: lats approve {event['run_id']}\n")
        elif kind == "plan_reviewed":
            by = f" by {event['by']}" if event.get("by") else ""
            done = {"approve": "approved", "edit": "edited"}.get(event["action"], "rejected")
            self.out.write(f"plan {done}{by}\n")
            if event.get("root"):
                self._brief(event["root"])
        elif kind == "steered":
            if event.get("node"):
                self._brief(event["node"])
            outcome = "applied" if event["applied"] else f"refused: {event['reason']}"
            by = f" by {event['by']}" if event.get("by") else ""
            self._line(depth, f"☞ {event['command']} {node_id}{by}: {outcome}")
        elif kind == "path_completed":
            self._line(depth, f"★ path {' → '.join(event['path'])} has an answer")
        elif kind == "answer_ready":
            calls = (event.get("metrics") or {}).get("llm_calls", 0)
            self.out.write(
                f"\nfirst answer (provisional, {calls} model calls, {event['elapsed_s']:.1f}s;"
                f" the search goes on):\n{event['answer']}\n"
            )
            self.out.write(footnotes(event))
        elif kind == "branched":
            for node in event["nodes"]:
                self._brief(node)
            alternatives = ", ".join(f"{n['node_id']} {n['step']!r}" for n in event["nodes"])
            why = "; ".join(event.get("reasons") or [])
            self._line(depth, f"⑂ beside {node_id}: {alternatives or 'none'} ({why})")
        elif kind == "vote":
            how = event.get("chosen_by") or event["method"]
            self.out.write(f"vote: {event['chosen_id']} ({how})\n")
        elif kind == "done":
            self._done(event)
        elif kind == "error":
            self.out.write(f"error ({event['code']}): {event['message']}\n")
        elif kind == "cancelled":
            self.out.write("cancelled\n")
        self.out.flush()

    def _done(self, event: dict[str, Any]) -> None:
        partial = " (partial)" if event.get("partial") else ""
        first = event.get("first")
        if first is not None and event.get("chosen_by") == "first":
            partial += " (the first answer, kept)"
        elif event.get("chosen_by") == "carried":
            partial += " (the first path's, once it ran the steps its plan had left)"
        elif first is not None and first.get("node_id") != event.get("chosen_id"):
            partial += " (replaces the first answer)"
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


class Progress:
    """The run's progress as one line, folded from its events: paths completed of
    `max_paths`, model calls and tokens against their budgets (the `metrics` so far that
    `node_finished`, `candidates` and `path_completed` carry), and the seconds since it began."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self.clock = clock
        self.started = clock()
        self.budgets: dict[str, Any] = {}
        self.paths = 0
        self.calls = 0
        self.tokens = 0

    def handle(self, event: dict[str, Any]) -> None:
        kind = event.get("type")
        if kind == "run_started":
            self.budgets = event.get("params") or {}
        elif kind == "path_completed":
            self.paths += 1
        metrics = event.get("metrics")
        if metrics:
            self.calls = metrics.get("llm_calls", self.calls)
            self.tokens = metrics.get("input_tokens", 0) + metrics.get("output_tokens", 0)

    def line(self) -> str:
        elapsed = f"{self.clock() - self.started:.0f}s"
        if not self.budgets:
            return f"starting · {elapsed}"

        def of(key: str) -> str:
            return f"/{self.budgets[key]:,}" if key in self.budgets else ""

        return (
            f"paths {self.paths}{of('max_paths')} · model calls {self.calls}{of('max_llm_calls')}"
            f" · tokens {self.tokens:,}{of('max_tokens')} · {elapsed}"
        )


class LiveTree:
    """A terminal's view of a run: the tree's lines print above a progress line that is
    redrawn in place; at the terminal event the line goes and the answer and costs follow.

    A context manager: the line is drawn while it is entered. Output to stderr while it is
    drawn (log records) prints above the line too, when stderr is the same terminal."""

    def __init__(self, console: Console, clock: Callable[[], float] = time.monotonic) -> None:
        self.progress = Progress(clock)
        self.printer = TreePrinter(FileProxy(console, console.file))
        self._spinner = Spinner("dots", style="cyan")
        self.live = Live(
            console=console,
            get_renderable=self._render,
            refresh_per_second=4,
            transient=True,
            redirect_stdout=True,
            redirect_stderr=sys.stderr.isatty(),
        )

    def _render(self) -> Spinner:
        self._spinner.update(text=Text(self.progress.line()))
        return self._spinner

    def __enter__(self) -> LiveTree:
        self.live.start()
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.live.stop()

    def handle(self, event: dict[str, Any]) -> None:
        self.progress.handle(event)
        if event.get("type") in TERMINAL_TYPES:
            self.live.stop()
        elif self.live.is_started:
            # Redrawn now rather than at the next tick: a line printed above it shows the line
            # as last drawn, and a fast run ends before the ticks see its progress.
            self.live.refresh()
        self.printer.handle(event)
