"""A cited reply cut short: what of it can still be read.

A model with a small token limit (the local ones: `LATS_LOCAL_MAX_TOKENS`, 256 by default) can
stop in the middle of its `CitedAnswer`, typically in a long quote of its last citation. Taken
as prose, the whole JSON text would become the answer. Read instead as the JSON it began, the
reply keeps its `answer` and every citation that was written whole; the citation the cut fell
in is dropped, so no quote the model did not finish is ever shown (the verifier still checks
the rest, as for any reply).
"""

from __future__ import annotations

import json
from typing import Any

from langchain_core.utils.json import parse_partial_json
from pydantic import ValidationError

from agents.grounding.verify import CitationClaim, CitedAnswer


def salvaged(text: str) -> CitedAnswer | None:
    """The `CitedAnswer` that `text` began, or None when `text` is not the start of one (an
    answer in prose, or JSON without an answer string)."""
    body = text.strip()
    if not body.startswith("{"):
        return None
    try:
        whole: Any = json.loads(body)
        cut = False
    except json.JSONDecodeError:
        try:
            whole = parse_partial_json(body)
        except json.JSONDecodeError:
            return None
        cut = True
    if not isinstance(whole, dict) or not isinstance(whole.get("answer"), str):
        return None
    items = whole.get("citations")
    items = list(items) if isinstance(items, list) else []
    if cut and items and not _last_item_whole(body, len(items)):
        items.pop()  # the cut fell inside it
    claims = []
    for item in items:
        try:
            claims.append(CitationClaim.model_validate(item))
        except ValidationError:
            continue
    return CitedAnswer(answer=whole["answer"], citations=claims)


def _last_item_whole(body: str, count: int) -> bool:
    """Whether the reply's `count`-th citation was closed before the cut: the text up to its
    last closing brace, with the list and the object closed, holds `count` citations."""
    end = body.rfind("}")
    try:
        closed = json.loads(body[: end + 1] + "]}")
    except json.JSONDecodeError:
        return False
    items = closed.get("citations") if isinstance(closed, dict) else None
    return isinstance(items, list) and len(items) == count
