"""The environment of a service process whose models are the real Gemini client against the
simulator, with `local_docs` as its one tool over a one-file folder."""

from __future__ import annotations

from pathlib import Path


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
