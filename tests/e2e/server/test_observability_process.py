"""The server as a real process with its observability switched on: spans exported over OTLP
to a local collector stand-in, and /metrics in prometheus-client's multiprocess mode."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import httpx
import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from prometheus_client.parser import text_string_to_metric_families

from testkit.gemini_roles import research_scenario
from testkit.gemini_sim import GeminiSimulator
from testkit.process import ServerProcess
from tests.support.sim_env import sim_service_env

RUN_SPANS = ("invoke_agent ", "plantree.", "chat ", "execute_tool ")


class Collector:
    """Accepts OTLP/HTTP protobuf trace exports on loopback and keeps the span names."""

    def __init__(self) -> None:
        self.spans: list[tuple[str, dict[str, str]]] = []
        collector = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers["Content-Length"]))
                request = ExportTraceServiceRequest()
                request.ParseFromString(body)
                for resource in request.resource_spans:
                    for scope in resource.scope_spans:
                        for span in scope.spans:
                            attrs = {a.key: a.value.string_value for a in span.attributes}
                            collector.spans.append((span.name, attrs))
                self.send_response(200)
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, format: str, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def collector() -> Iterator[Collector]:
    c = Collector()
    yield c
    c.stop()


def test_a_run_is_exported_over_otlp_and_counted_across_processes(
    tmp_path: Path, collector: Collector
) -> None:
    multiproc = tmp_path / "prom"
    multiproc.mkdir()
    with GeminiSimulator(research_scenario()) as sim:
        env = {
            **sim_service_env(sim.base_url, tmp_path),
            "OTEL_EXPORTER_OTLP_ENDPOINT": collector.url,
            "OTEL_BSP_SCHEDULE_DELAY": "100",
            "PROMETHEUS_MULTIPROC_DIR": str(multiproc),
        }
        server = ServerProcess(env).start()
        try:
            with httpx.Client(base_url=server.url, timeout=60) as client:
                run = client.post(
                    "/solve",
                    json={"task": "What do the sources say?", "max_paths": 2},
                    headers={"Accept": "application/json"},
                ).json()
                metrics = client.get("/metrics").text
        finally:
            # uvicorn re-raises SIGTERM after its graceful shutdown (-15).
            assert server.terminate() in (0, -15)

    assert run["status"] == "done"
    names = [name for name, _ in collector.spans]
    assert names.count("invoke_agent plantree") == 1
    assert "chat gemini-2.5-flash" in names
    assert "execute_tool local_docs" in names
    ours = [a for name, a in collector.spans if name.startswith(RUN_SPANS)]
    assert {a.get("plantree.run_id") for a in ours} == {run["run_id"]}
    assert any(name.startswith("POST /solve") for name in names)  # FastAPI's own HTTP span
    chat = next(a for name, a in collector.spans if name.startswith("chat "))
    assert chat["gen_ai.provider.name"] == "gcp.gemini"

    samples = {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(metrics)
        for s in family.samples
    }
    calls = sum(v for (n, _), v in samples.items() if n == "plantree_model_calls_total")
    assert calls == run["metrics"]["llm_calls"]
    assert samples[("plantree_runs_total", (("status", "done"),))] == 1
    assert list(multiproc.glob("*.db"))  # the values live in the shared directory
