"""LangSmith tracing passes through: with LANGSMITH_TRACING on, LangChain's tracer posts the
run's calls, with plantree's run and node ids in their metadata, to the LangSmith endpoint (a
loopback stand-in here). A subprocess, because LangSmith reads its settings once per process."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
import zstandard

ROOT = Path(__file__).resolve().parents[3]
SCRIPT = """
import asyncio
from langchain_core.tracers.langchain import wait_for_all_tracers
from agents.engine import Engine
from agents.params import RunParams
from agents.settings import EngineSettings
from testkit.fakes import FakeModels
from testkit.scenario import Scenario

async def main() -> str:
    engine = Engine(
        settings=EngineSettings(_env_file=None), models=FakeModels(Scenario(plan=["A"])), tools=[]
    )
    return (await engine.run("q", RunParams(max_paths=1))).run_id

print(asyncio.run(main()))
wait_for_all_tracers()
"""


class LangSmithStandIn:
    """Answers LangSmith's API on loopback and keeps every request body, decompressed."""

    def __init__(self) -> None:
        self.bodies: list[bytes] = []
        kept = self.bodies

        class Handler(BaseHTTPRequestHandler):
            def _answer(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                if self.headers.get("Content-Encoding") == "zstd":
                    body = zstandard.ZstdDecompressor().decompressobj().decompress(body)
                kept.append(body)
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", "2")
                self.end_headers()
                self.wfile.write(b"{}")

            do_GET = do_POST = do_PATCH = _answer

            def log_message(self, format: str, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()


@pytest.fixture
def langsmith() -> Iterator[LangSmithStandIn]:
    stand_in = LangSmithStandIn()
    yield stand_in
    stand_in.server.shutdown()
    stand_in.server.server_close()


def test_langsmith_receives_the_calls_with_run_and_node_ids(
    langsmith: LangSmithStandIn,
) -> None:
    env = {
        **os.environ,
        "LANGSMITH_TRACING": "true",
        "LANGSMITH_API_KEY": "lsv2-simulated",
        "LANGSMITH_ENDPOINT": langsmith.url,
        "LANGSMITH_PROJECT": "plantree-test",
    }
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=90,
        check=True,
    )
    run_id = done.stdout.strip().splitlines()[-1]

    sent = b"\n".join(langsmith.bodies)
    assert run_id.encode() in sent
    assert b'"node_id":"n1"' in sent.replace(b'": "', b'":"')
    assert b'"role":"executor"' in sent.replace(b'": "', b'":"')
