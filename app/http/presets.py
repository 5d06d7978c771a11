"""The search presets the compatible APIs offer: run parameters under a name, which an OpenAI
model name (app/openai_api/) and an Agent Server assistant id (app/agent_server/) pick."""

from __future__ import annotations

from typing import Any

PRESETS: dict[str, dict[str, Any]] = {
    "plantree": {},
    "plantree-fast": {
        "max_paths": 2,
        "max_candidates": 2,
        "max_depth": 3,
        "max_llm_calls": 40,
        "deadline_s": 180.0,
    },
}
