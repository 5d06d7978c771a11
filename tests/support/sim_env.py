"""The environment of a service process whose models are the real Gemini client against the
simulator, with `local_docs` as its one tool over a one-file folder, and such a process."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from testkit.gemini_sim import GeminiSimulator, Script
from testkit.process import ServerProcess


def sim_service_env(sim_url: str, tmp_path: Path) -> dict[str, str]:
    docs = tmp_path / "docs"
    docs.mkdir(exist_ok=True)
    (docs / "sources.md").write_text("# Sources\n\nThe sources agree on the main result.\n")
    return {
        "GOOGLE_API_KEY": "simulated-key",
        "GOOGLE_GEMINI_BASE_URL": sim_url,
        "LATS_MODEL": "google_genai:gemini-2.5-flash",
        "LATS_TOOLS": "local_docs",
        "LATS_LOCAL_DOCS_DIR": str(docs),
        "LATS_DATA_DIR": str(tmp_path / "data"),
        "LATS_MODEL_RETRY_BASE_DELAY_S": "0",
        "LATS_MODEL_RPS": "0",  # no pacing against the simulator
    }


@contextmanager
def sim_server(
    script: Script, tmp_path: Path, start_timeout_s: float = 60, **env: str
) -> Iterator[ServerProcess]:
    """A started service process of `sim_service_env` (and `env`) whose simulator answers from
    `script`; killed on the way out."""
    with GeminiSimulator(script) as sim:
        process = ServerProcess({**sim_service_env(sim.base_url, tmp_path), **env})
        process.start(start_timeout_s)
        try:
            yield process
        finally:
            process.kill()
