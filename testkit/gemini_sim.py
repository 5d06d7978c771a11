"""A Gemini REST simulator: a real HTTP server on 127.0.0.1 speaking `generateContent` and
`streamGenerateContent?alt=sse` the way the google-genai SDK calls them.

A test scripts the replies (a function gets each parsed request and returns text, a JSON
object, function calls or a fault), can inject latency, HTTP errors, malformed bodies, slow
streams and seeded random faults, and asserts on every request the server received. In quota
mode (`Quota`) a token bucket admits requests and answers the excess at once with Gemini's
429 RESOURCE_EXHAUSTED body (`google.rpc.QuotaFailure`, `google.rpc.RetryInfo`).

In-process (a background thread)::

    with GeminiSimulator(script) as sim:
        monkeypatch.setenv("GOOGLE_GEMINI_BASE_URL", sim.base_url)
        ...
    sim.requests  # every request, parsed

As a process (for tests that start the server as a subprocess)::

    python -m testkit.gemini_sim --port 0 --scenario research [--fault-rate 0.2]

prints `GEMINI_SIM_URL=http://127.0.0.1:PORT` once it listens; `GET /_sim/requests` returns the
recorded requests as JSON.
"""

from __future__ import annotations

import argparse
import json
import logging
import random
import re
import signal
import sys
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any
from urllib.parse import urlsplit

from testkit.gemini_roles import SCENARIOS
from testkit.gemini_script import (
    Call,
    Delayed,
    Disconnect,
    Fault,
    Json,
    Malformed,
    Reply,
    Script,
    SimRequest,
    Slow,
    Text,
)

__all__ = [
    "Call",
    "Delayed",
    "Disconnect",
    "Fault",
    "GeminiSimulator",
    "Json",
    "Malformed",
    "Quota",
    "RandomFaults",
    "Reply",
    "Script",
    "ScriptError",
    "SimRequest",
    "SimulatorMaker",
    "Slow",
    "Text",
    "main",
]

logger = logging.getLogger(__name__)

_PATH = re.compile(r"^/(?P<version>v1(?:alpha|beta)?)/models/(?P<model>[^/:]+):(?P<method>\w+)$")
_STATUS_NAMES = {
    400: "INVALID_ARGUMENT",
    401: "UNAUTHENTICATED",
    403: "PERMISSION_DENIED",
    404: "NOT_FOUND",
    429: "RESOURCE_EXHAUSTED",
    500: "INTERNAL",
    502: "BAD_GATEWAY",
    503: "UNAVAILABLE",
    504: "DEADLINE_EXCEEDED",
}


# -- faults and quota --------------------------------------------------------------------------


@dataclass
class RandomFaults:
    """Fails a share of calls at random, reproducibly: each request draws from one seeded RNG
    in arrival order; a draw below `rate` answers with one of `statuses`."""

    rate: float
    statuses: Sequence[int] = (429, 503)
    seed: int = 0
    _rng: random.Random = field(init=False, repr=False)
    _lock: threading.Lock = field(init=False, repr=False, default_factory=threading.Lock)

    def __post_init__(self) -> None:
        self._rng = random.Random(self.seed)

    def draw(self) -> Fault | None:
        with self._lock:
            if self._rng.random() >= self.rate:
                return None
            return Fault(self._rng.choice(list(self.statuses)), "injected random fault")


@dataclass
class Quota:
    """A requests-per-second quota as a token bucket: `burst` requests at once, refilled at
    `rps`. A request that finds no token is refused with Gemini's 429 and a `retryDelay` of
    the time until the next token."""

    rps: float
    burst: int = 1
    clock: Callable[[], float] = time.monotonic
    admitted: int = 0
    rejected: int = 0
    _tokens: float = field(init=False)
    _stamp: float = field(init=False)
    _lock: threading.Lock = field(init=False, repr=False, default_factory=threading.Lock)

    def __post_init__(self) -> None:
        if self.rps <= 0:
            raise ValueError("rps must be positive")
        self._tokens = float(self.burst)
        self._stamp = self.clock()

    def take(self) -> float | None:
        """None when the request is admitted, else the seconds until a token is free."""
        with self._lock:
            now = self.clock()
            self._tokens = min(float(self.burst), self._tokens + (now - self._stamp) * self.rps)
            self._stamp = now
            if self._tokens >= 1.0:
                self._tokens -= 1.0
                self.admitted += 1
                return None
            self.rejected += 1
            return (1.0 - self._tokens) / self.rps

    def body(self, model: str, retry_s: float) -> dict[str, Any]:
        """Gemini's 429 error body for this quota."""
        per_minute = round(self.rps * 60)
        delay = f"{retry_s:.3f}".rstrip("0").rstrip(".") + "s"
        return {
            "error": {
                "code": 429,
                "message": (
                    "You exceeded your current quota, please check your plan and billing "
                    "details.\n* Quota exceeded for metric: generativelanguage.googleapis.com/"
                    f"generate_content_requests, limit: {per_minute}, model: {model}\n"
                    f"Please retry in {delay}."
                ),
                "status": "RESOURCE_EXHAUSTED",
                "details": [
                    {
                        "@type": "type.googleapis.com/google.rpc.QuotaFailure",
                        "violations": [
                            {
                                "quotaMetric": "generativelanguage.googleapis.com/"
                                "generate_content_requests",
                                "quotaId": "GenerateRequestsPerMinutePerProjectPerModel",
                                "quotaDimensions": {"location": "global", "model": model},
                                "quotaValue": str(per_minute),
                            }
                        ],
                    },
                    {
                        "@type": "type.googleapis.com/google.rpc.Help",
                        "links": [
                            {
                                "description": "Learn more about Gemini API quotas",
                                "url": "https://ai.google.dev/gemini-api/docs/rate-limits",
                            }
                        ],
                    },
                    {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": delay},
                ],
            }
        }


class ScriptError(AssertionError):
    """The test's script raised: the request got a 500 and the test should fail loudly."""


# -- the server --------------------------------------------------------------------------------


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        # A client that went away mid-reply (a timeout, a killed server under test) is normal
        # here, not a traceback on stderr.
        error = sys.exc_info()[1]
        if isinstance(error, ConnectionError):
            logger.debug("gemini-sim: client %s went away: %r", client_address, error)
            return
        logger.error("gemini-sim: error serving %s", client_address, exc_info=error)


def _tokens(text: str) -> int:
    return len(text) // 4 + 1


class GeminiSimulator:
    """The HTTP server. Use as a context manager, or `start()` / `stop()`."""

    def __init__(
        self,
        script: Script,
        *,
        faults: RandomFaults | None = None,
        latency_s: float = 0.0,
        quota: Quota | None = None,
        host: str = "127.0.0.1",
        port: int = 0,
    ) -> None:
        self.script = script
        self.faults = faults
        self.quota = quota
        self.latency_s = latency_s
        self.requests: list[SimRequest] = []
        self.script_errors: list[BaseException] = []
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._server = _Server((host, port), _handler_for(self))
        self._thread: threading.Thread | None = None

    # lifecycle --------------------------------------------------------------------------------

    @property
    def base_url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    def start(self) -> GeminiSimulator:
        """Serve in a daemon thread; returns once the socket listens (it is bound already)."""
        # A short poll interval keeps stop() quick: shutdown waits for the next poll.
        self._thread = threading.Thread(
            target=self._server.serve_forever, args=(0.05,), name="gemini-sim", daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving; delayed replies still pending give up at once."""
        self._stopping.set()
        self._server.shutdown()
        self._server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def __enter__(self) -> GeminiSimulator:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    # what happened ----------------------------------------------------------------------------

    def answered(self, status: int) -> list[SimRequest]:
        """Requests that got `status`."""
        with self._lock:
            return [r for r in self.requests if r.status == status]

    def check(self) -> None:
        """Raise if a script failed (its request got a 500 the test did not ask for)."""
        if self.script_errors:
            raise ScriptError(f"the simulator script raised: {self.script_errors[0]!r}")

    # serving ----------------------------------------------------------------------------------

    def _record(self, model: str, stream: bool, api_key: str | None, body: dict[str, Any]) -> Any:
        with self._lock:
            request = SimRequest(len(self.requests) + 1, model, stream, api_key, body)
            request.at = time.monotonic()
            self.requests.append(request)
        return request

    def _decide(self, request: SimRequest) -> Reply:
        if self.faults is not None:
            fault = self.faults.draw()
            if fault is not None:
                return fault
        try:
            return self.script(request)
        except Exception as e:  # reported through check(); the client sees a server error
            logger.exception("gemini-sim script failed on request %d", request.seq)
            with self._lock:
                self.script_errors.append(e)
            return Fault(500, f"simulator script error: {type(e).__name__}")

    def _wait(self, seconds: float) -> bool:
        """Sleep up to `seconds`; False when the server is stopping."""
        return not self._stopping.wait(seconds) if seconds > 0 else True


SimulatorMaker = Callable[..., GeminiSimulator]  # the `gemini_sim` fixture: a started simulator


def _parts(reply: Text | Json | Call | list[Call]) -> tuple[list[dict[str, Any]], str, int]:
    """(parts, text for token counting, thoughts tokens)."""
    if isinstance(reply, Text):
        return [{"text": reply.text}], reply.text, reply.thoughts_tokens
    if isinstance(reply, Json):
        text = json.dumps(reply.value)
        return [{"text": text}], text, reply.thoughts_tokens
    calls = [reply] if isinstance(reply, Call) else reply
    parts = [{"functionCall": {"name": c.name, "args": c.args}} for c in calls]
    return parts, json.dumps(parts), 0


def _response(
    request: SimRequest, parts: list[dict[str, Any]], out_text: str, thoughts: int, final: bool
) -> dict[str, Any]:
    body: dict[str, Any] = {
        "candidates": [
            {"content": {"role": "model", "parts": parts}, "index": 0}
            | ({"finishReason": "STOP"} if final else {})
        ],
        "modelVersion": request.model,
        "responseId": f"sim-{request.seq}",
    }
    if final:
        prompt = _tokens(request.system + request.prompt)
        out = _tokens(out_text)
        usage: dict[str, Any] = {
            "promptTokenCount": prompt,
            "candidatesTokenCount": out,
            "totalTokenCount": prompt + out + thoughts,
        }
        if thoughts:
            usage["thoughtsTokenCount"] = thoughts
        body["usageMetadata"] = usage
        request.usage = usage
    return body


def _split(text: str, pieces: int) -> list[str]:
    size = max(1, -(-len(text) // max(1, pieces)))
    return [text[i : i + size] for i in range(0, len(text), size)] or [""]


def _handler_for(sim: GeminiSimulator) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        server_version = "gemini-sim/1"

        def log_message(self, format: str, *args: Any) -> None:
            logger.debug("gemini-sim: %s", format % args)

        # plumbing -----------------------------------------------------------------------------

        def _send_json(self, status: int, payload: Any) -> None:
            self._send_raw(status, json.dumps(payload))

        def _send_raw(self, status: int, text: str) -> None:
            data = text.encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json; charset=UTF-8")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def _error(self, status: int, message: str) -> None:
            self._send_json(
                status,
                {
                    "error": {
                        "code": status,
                        "message": message,
                        "status": _STATUS_NAMES.get(status, "UNKNOWN"),
                    }
                },
            )

        # routes -------------------------------------------------------------------------------

        def do_GET(self) -> None:
            path = urlsplit(self.path).path
            if path == "/_sim/health":
                self._send_json(200, {"ok": True})
            elif path == "/_sim/requests":
                with sim._lock:
                    rows = [
                        {
                            "seq": r.seq,
                            "model": r.model,
                            "stream": r.stream,
                            "status": r.status,
                            "at": r.at,
                            "body": r.body,
                        }
                        for r in sim.requests
                    ]
                self._send_json(200, rows)
            else:
                self._error(404, f"no route {path}")

        def do_POST(self) -> None:
            url = urlsplit(self.path)
            match = _PATH.match(url.path)
            if match is None or match["method"] not in {"generateContent", "streamGenerateContent"}:
                self._error(404, f"no route {url.path}")
                return
            length = int(self.headers.get("Content-Length") or 0)
            try:
                body = json.loads(self.rfile.read(length) or b"{}")
            except json.JSONDecodeError:
                self._error(400, "request body is not JSON")
                return
            stream = match["method"] == "streamGenerateContent"
            api_key = self.headers.get("x-goog-api-key")
            request = sim._record(match["model"], stream, api_key, body)
            if not api_key:
                request.status = 401
                self._error(401, "API key not valid. Please pass a valid API key.")
                return
            if sim.quota is not None:
                wait = sim.quota.take()
                if wait is not None:
                    request.status = 429
                    self._send_json(429, sim.quota.body(request.model, wait))
                    return
            self._reply(request, sim._decide(request), sim.latency_s)

        def _reply(self, request: SimRequest, reply: Reply, delay_s: float) -> None:
            if isinstance(reply, Delayed):
                self._reply(request, reply.reply, delay_s + reply.seconds)
                return
            if not sim._wait(delay_s):
                return
            chunk_delay = 0.0
            chunks = 1
            if isinstance(reply, Slow):
                chunk_delay, chunks, reply = reply.chunk_delay_s, reply.chunks, reply.reply
                if not request.stream and not sim._wait(chunk_delay * chunks):
                    return
            if isinstance(reply, str):
                reply = Text(reply)
            elif isinstance(reply, dict):
                reply = Json(reply)
            if isinstance(reply, Disconnect):
                request.status = 0
                self.close_connection = True
                return
            if isinstance(reply, Fault):
                request.status = reply.status
                self._error(reply.status, reply.message)
                return
            request.status = 200
            if isinstance(reply, Malformed):
                if request.stream:
                    self._stream([f"data: {reply.body}\r\n\r\n"], 0.0)
                else:
                    self._send_raw(200, reply.body)
                return
            if isinstance(reply, Delayed | Slow):
                raise ScriptError("nest Delayed/Slow outside the reply, not inside Slow")
            parts, out_text, thoughts = _parts(reply)
            if not request.stream:
                self._send_json(200, _response(request, parts, out_text, thoughts, final=True))
                return
            frames: list[str] = []
            if len(parts) == 1 and "text" in parts[0]:
                pieces = _split(parts[0]["text"], chunks if chunk_delay else 2)
                for index, piece in enumerate(pieces):
                    final = index == len(pieces) - 1
                    body = _response(request, [{"text": piece}], out_text, thoughts, final)
                    frames.append(f"data: {json.dumps(body)}\r\n\r\n")
            else:
                body = _response(request, parts, out_text, thoughts, final=True)
                frames.append(f"data: {json.dumps(body)}\r\n\r\n")
            self._stream(frames, chunk_delay)

        def _stream(self, frames: list[str], delay_s: float) -> None:
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Cache-Control", "no-cache")
            self.end_headers()
            for index, frame in enumerate(frames):
                if index and not sim._wait(delay_s):
                    return
                self.wfile.write(frame.encode())
                self.wfile.flush()

    return Handler


# -- command line ------------------------------------------------------------------------------


def main(argv: Sequence[str] | None = None) -> int:
    """Serve a named scenario until SIGTERM/SIGINT; print the URL once listening."""
    parser = argparse.ArgumentParser(prog="python -m testkit.gemini_sim")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0, help="0 picks a free port")
    parser.add_argument("--scenario", default="research", choices=sorted(SCENARIOS))
    parser.add_argument("--fault-rate", type=float, default=0.0)
    parser.add_argument("--fault-statuses", default="429,503")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--latency", type=float, default=0.0, help="seconds before each reply")
    parser.add_argument("--quota-rps", type=float, default=0.0, help="requests/s quota (0: none)")
    parser.add_argument("--quota-burst", type=int, default=1, help="requests at once in quota")
    args = parser.parse_args(argv)
    faults = None
    if args.fault_rate > 0:
        statuses = [int(s) for s in args.fault_statuses.split(",") if s.strip()]
        faults = RandomFaults(args.fault_rate, statuses, args.seed)
    sim = GeminiSimulator(
        SCENARIOS[args.scenario](),
        faults=faults,
        latency_s=args.latency,
        quota=Quota(args.quota_rps, args.quota_burst) if args.quota_rps > 0 else None,
        host=args.host,
        port=args.port,
    )
    done = threading.Event()
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda *_: done.set())
    with sim:
        sys.stdout.write(f"GEMINI_SIM_URL={sim.base_url}\n")
        sys.stdout.flush()
        done.wait()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
