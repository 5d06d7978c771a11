"""The page listens for every event type the engine emits: an `EventSource` delivers only the
types it was given a listener for (app/static/js/api.js: EVENT_TYPES)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import get_args

from agents.events import Event

API_JS = Path(__file__).resolve().parents[2] / "app" / "static" / "js" / "api.js"


def test_the_pages_event_types_are_the_engines() -> None:
    block = re.search(r"EVENT_TYPES = \[(.*?)\];", API_JS.read_text(), re.DOTALL)
    assert block is not None
    listened = set(re.findall(r'"(\w+)"', block.group(1)))
    members = get_args(get_args(Event)[0])
    emitted = {member.model_fields["type"].default for member in members}

    assert listened == emitted
