"""The page knows the engine's vocabulary: it listens for every event type the engine emits (an
`EventSource` delivers only the types it was given a listener for: app/static/js/api.js
EVENT_TYPES), and it words every way an answer can be chosen (app/static/js/panel.js CHOSEN_BY)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import get_args

from agents.answer import ChosenBy
from agents.events import Event

API_JS = Path(__file__).resolve().parents[2] / "app" / "static" / "js" / "api.js"


def test_the_pages_event_types_are_the_engines() -> None:
    block = re.search(r"EVENT_TYPES = \[(.*?)\];", API_JS.read_text(), re.DOTALL)
    assert block is not None
    listened = set(re.findall(r'"(\w+)"', block.group(1)))
    members = get_args(get_args(Event)[0])
    emitted = {member.model_fields["type"].default for member in members}

    assert listened == emitted


def test_the_page_says_every_way_an_answer_can_be_chosen() -> None:
    panel = API_JS.with_name("panel.js").read_text()
    block = re.search(r"const CHOSEN_BY = \{(.*?)\};", panel, re.DOTALL)
    assert block is not None
    said = set(re.findall(r"^\s*(\w+):", block.group(1), re.MULTILINE))

    assert said == set(get_args(ChosenBy))
