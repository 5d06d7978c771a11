"""`python -m bench.serve`: the real app as a process, with scripted models and injected latency.

For the load and memory benchmarks: the service (FastAPI, run manager, SQLite run store and
checkpointer) runs exactly as deployed; only the models are scripted (testkit), each call
sleeping its injected latency behind the production call policy at its default settings
(`testkit.policy_models.ThroughPolicy`: timeouts, retries, the adaptive rate limiter and its
in-flight cap). Once it listens, it writes one JSON line
`{"port": …, "pid": …}` to stdout. SIGTERM/SIGINT stop it (uvicorn's graceful shutdown).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import os
import shutil
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

import uvicorn

from app.main import create_app
from bench.engine_runs import add_server_arguments, bench_settings
from bench.models import served_models

logger = logging.getLogger(__name__)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m bench.serve", description=__doc__)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0, help="0: any free port (reported)")
    add_server_arguments(parser, max_active_runs=256)
    parser.add_argument(
        "--data-dir",
        type=Path,
        default=None,
        help="run store and checkpoints (default: a temp dir)",
    )
    return parser


async def _serve(args: argparse.Namespace, data_dir: Path) -> None:
    settings = bench_settings(
        data_dir,
        max_active_runs=args.max_active_runs,
        max_queued_runs=args.max_queued_runs,
    )
    models = served_models(args, settings)
    app = create_app(settings, models=models, tools=[], host=args.host)
    config = uvicorn.Config(
        app, host=args.host, port=args.port, log_level="warning", lifespan="on", log_config=None
    )
    server = uvicorn.Server(config)
    task = asyncio.create_task(server.serve())
    while not server.started:
        if task.done():
            task.result()  # surfaces a start-up failure
            return
        await asyncio.sleep(0.02)  # uvicorn has no start event, only this flag
    port = server.servers[0].sockets[0].getsockname()[1]
    sys.stdout.write(json.dumps({"port": port, "pid": os.getpid()}) + "\n")
    sys.stdout.flush()
    logger.info("bench server on %s:%s (scenario %s)", args.host, port, args.scenario)
    await task


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    logging.basicConfig(
        level=logging.WARNING, format="%(asctime)s %(levelname)s %(name)s %(message)s"
    )
    data_dir = args.data_dir or Path(tempfile.mkdtemp(prefix="bench-serve-"))
    try:
        asyncio.run(_serve(args, data_dir))
    finally:
        if args.data_dir is None:
            shutil.rmtree(data_dir, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
