"""What a tool hands back: model-facing text bounded in size, and a plain-dict artifact.

Every tool returns `(content, artifact)` (LangChain's `content_and_artifact`). The artifact is
`{"ok": bool, "error_kind": str | None, "sources": [{"title": str, "url": str}, ...]}`, and for
tools that can say which sentences they showed, an optional `passages` list (`PassageRecord`):

- `ok=False`: the tool could not do its job; `error_kind` is one of `FAILURE_KINDS`.
- `ok=True, error_kind=None`: results; `sources` lists exactly the results shown in `content`.
- `ok=True, error_kind` in `EMPTY_KINDS`: the source answered, but with nothing to cite
  (`no_results`, or `disambiguation` with the options offered back to the model in `content`).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal, NotRequired, Protocol, TypedDict, get_args

FailureKind = Literal[
    "timeout", "rate_limited", "http_error", "network", "bad_response", "invalid_input", "internal"
]
EmptyKind = Literal["no_results", "disambiguation"]

FAILURE_KINDS: frozenset[str] = frozenset(get_args(FailureKind))
EMPTY_KINDS: frozenset[str] = frozenset(get_args(EmptyKind))

TITLE_MAX_CHARS = 200
MIN_BODY_CHARS = 120
_ELLIPSIS = "…"
_SPACES = re.compile(r"\s+")

# What the model reads for each failure: name the tool, the kind, and what to do next.
_FAILURE_TEXT: dict[str, str] = {
    "timeout": "timed out, try again later or use a different tool",
    "rate_limited": "rate limited, try a different query or tool",
    "http_error": "the service answered with an error{detail}, try a different query or tool",
    "network": "the service is unreachable (network error), use a different tool",
    "bad_response": "the service sent a response that could not be read, try a different tool",
    "invalid_input": "invalid input{detail}",
    "internal": "failed unexpectedly, use a different tool",
}


class Source(TypedDict):
    """One citable result."""

    title: str
    url: str


class SentenceRecord(TypedDict):
    """One whole sentence of a passage: `text[start:end]` of its `PassageRecord`."""

    sent_id: int
    start: int
    end: int


class PassageRecord(TypedDict):
    """One passage as the model read it: `text` appears verbatim in the tool's content."""

    doc_id: str
    title: str
    url: str
    text: str
    sentences: list[SentenceRecord]


class ToolArtifact(TypedDict):
    """The structured half of every tool result; the engine turns it into a `tool_call` event."""

    ok: bool
    error_kind: str | None
    sources: list[Source]
    passages: NotRequired[list[PassageRecord]]
    """Evidence for later checks: each passage shown, its text exactly as in the content (its
    `sentences` only from tools over sentence-split text)."""


ToolResult = tuple[str, ToolArtifact]


@dataclass(frozen=True, slots=True)
class Hit:
    """One result before formatting: `meta` is one short line (authors, dates), `text` the body."""

    title: str
    url: str
    text: str
    meta: str = ""


def squash(text: str) -> str:
    """Collapse runs of whitespace (newlines included) into single spaces."""
    return _SPACES.sub(" ", text).strip()


def shorten(text: str, max_chars: int) -> str:
    """`text` squashed and cut to at most `max_chars`, at a word boundary where one is near."""
    text = squash(text)
    if len(text) <= max_chars:
        return text
    if max_chars <= len(_ELLIPSIS):
        return ""
    cut = text[: max_chars - len(_ELLIPSIS)]
    space = cut.rfind(" ")
    # Only back up to a word boundary when that loses little; a long token is cut as is.
    if space >= len(cut) * 3 // 4:
        cut = cut[:space]
    return cut.rstrip() + _ELLIPSIS


def failure(tool: str, kind: FailureKind, detail: str = "") -> ToolResult:
    """The observation for a failed call, e.g. "web_search: rate limited, try a different ..."."""
    text = _FAILURE_TEXT[kind].format(detail=f" ({detail})" if detail else "")
    return f"{tool}: {text}", {"ok": False, "error_kind": kind, "sources": []}


def no_results(tool: str, query: str) -> ToolResult:
    """The observation for a search that worked and found nothing."""
    content = f'{tool}: no results for "{shorten(query, 200)}"; try broader or different keywords'
    return content, {"ok": True, "error_kind": "no_results", "sources": []}


def options_offered(tool: str, query: str, options: Sequence[str], max_chars: int) -> ToolResult:
    """The observation for an ambiguous title: the options, so the model can pick one."""
    head = f'{tool}: "{shorten(query, 200)}" is ambiguous; call {tool} again with one of:'
    lines: list[str] = [head]
    used = len(head)
    for option in options:
        line = f"- {shorten(option, TITLE_MAX_CHARS)}"
        if used + 1 + len(line) > max_chars:
            break
        lines.append(line)
        used += 1 + len(line)
    return "\n".join(lines), {"ok": True, "error_kind": "disambiguation", "sources": []}


class Body(Protocol):
    """How one hit's text is measured and cut to its share of the budget."""

    def __len__(self) -> int: ...

    def cut(self, max_chars: int) -> str:
        """The text to show in at most `max_chars` characters ("" shows the header alone)."""
        ...


@dataclass(frozen=True, slots=True)
class SquashedBody:
    """The default: whitespace collapsed, cut at a word boundary with an ellipsis."""

    text: str

    def __len__(self) -> int:
        return len(self.text)

    def cut(self, max_chars: int) -> str:
        return shorten(self.text, max_chars)


@dataclass(frozen=True, slots=True)
class Layout:
    """Hits formatted for the model: `shown` pairs each hit shown with its body exactly as it
    appears in `content` ("" when only its header is there)."""

    content: str
    shown: list[tuple[Hit, str]]


def render_hits(
    tool: str, query: str, hits: Sequence[Hit], max_chars: int, footer: str = ""
) -> ToolResult:
    """Format hits for the model within `max_chars`; the sources are the hits that were shown.

    Text is shared fairly: short bodies keep all their text and leave the rest to the long ones.
    Hits whose header does not fit are dropped (and so are their sources), never cut mid-URL.
    """
    if not hits:
        return no_results(tool, query)
    layout = layout_hits(tool, query, hits, max_chars, footer)
    artifact: ToolArtifact = {
        "ok": True,
        "error_kind": None,
        "sources": shown_sources(layout),
        "passages": shown_passages(layout),
    }
    return layout.content, artifact


def shown_passages(layout: Layout) -> list[PassageRecord]:
    """Each hit shown with a body, its body exactly as the content shows it."""
    return [
        {"doc_id": hit.url, "title": hit.title, "url": hit.url, "text": body, "sentences": []}
        for hit, body in layout.shown
        if body
    ]


def shown_sources(layout: Layout) -> list[Source]:
    """The sources of the hits shown, in order, one per URL."""
    sources: list[Source] = []
    seen_urls: set[str] = set()
    for hit, _body in layout.shown:
        if hit.url not in seen_urls:
            seen_urls.add(hit.url)
            sources.append({"title": shorten(hit.title, TITLE_MAX_CHARS), "url": hit.url})
    return sources


def layout_hits(
    tool: str,
    query: str,
    hits: Sequence[Hit],
    max_chars: int,
    footer: str = "",
    bodies: Sequence[Body] | None = None,
) -> Layout:
    """The text of `render_hits` for one or more hits, and which hits it shows with what body.

    `bodies` (one per hit) decide how each text is measured and cut; by default
    `SquashedBody(squash(hit.text))`.
    """
    if not hits:
        raise ValueError("layout_hits needs at least one hit")
    if bodies is None:
        bodies = [SquashedBody(squash(hit.text)) for hit in hits]
    if len(bodies) != len(hits):
        raise ValueError(f"{len(bodies)} bodies for {len(hits)} hits")
    head = f'{tool} results for "{shorten(query, 200)}":'
    tail = f"\n\n{shorten(footer, max_chars // 4)}" if footer else ""
    headers = [_hit_header(index, hit) for index, hit in enumerate(hits, start=1)]
    # Each block is "\n\n" + header (+ "\n" + body). Fewer hits with readable text beat many
    # bare links: keep the most hits that still leave each one MIN_BODY_CHARS of text.
    count = len(hits)
    while count > 1:
        fixed = len(head) + len(tail) + sum(len(h) + 3 for h in headers[:count])
        wanted = sum(min(len(b), MIN_BODY_CHARS) for b in bodies[:count])
        if fixed + wanted <= max_chars:
            break
        count -= 1
    hits, headers, bodies = hits[:count], headers[:count], bodies[:count]
    fixed = len(head) + len(tail) + sum(len(h) + 3 for h in headers)
    shares = _fair_shares([len(b) for b in bodies], max(max_chars - fixed, 0))
    blocks: list[str] = []
    shown: list[tuple[Hit, str]] = []
    used = len(head) + len(tail)
    for hit, header, body, share in zip(hits, headers, bodies, shares, strict=True):
        text = body.cut(share)
        block = f"{header}\n{text}" if text else header
        if used + 2 + len(block) > max_chars:
            break
        blocks.append(block)
        shown.append((hit, text))
        used += 2 + len(block)
    if not blocks:
        # Even one header is too long for the budget: show the first hit cut to size. Its body
        # is then mixed with its header, so none of it counts as shown verbatim.
        first = shorten(f"{headers[0]} {squash(hits[0].text)}", max(max_chars - len(head) - 2, 0))
        blocks.append(first)
        shown.append((hits[0], ""))
    return Layout("\n\n".join([head, *blocks]) + tail, shown)


def read_artifact(artifact: object) -> ToolArtifact:
    """Normalise whatever a ToolMessage carries into a valid artifact.

    A tool call that LangChain rejected before the tool ran (arguments not matching the
    schema) has no artifact: it reads as `ok=False, error_kind="invalid_input"`.
    """
    if not isinstance(artifact, dict):
        return {"ok": False, "error_kind": "invalid_input", "sources": []}
    ok = artifact.get("ok") is True
    kind = artifact.get("error_kind")
    known = FAILURE_KINDS | EMPTY_KINDS
    error_kind = kind if isinstance(kind, str) and kind in known else None
    if not ok and error_kind is None:
        error_kind = "internal"
    sources: list[Source] = []
    raw_sources = artifact.get("sources")
    for item in raw_sources if isinstance(raw_sources, list) else []:
        if isinstance(item, dict):
            title, url = item.get("title"), item.get("url")
            if isinstance(title, str) and isinstance(url, str) and url:
                sources.append({"title": title, "url": url})
    return {"ok": ok, "error_kind": error_kind, "sources": sources}


def _hit_header(index: int, hit: Hit) -> str:
    header = f"[{index}] {shorten(hit.title, TITLE_MAX_CHARS) or '(untitled)'}\n{hit.url}"
    meta = shorten(hit.meta, 300)
    return f"{header}\n{meta}" if meta else header


def _fair_shares(lengths: Sequence[int], budget: int) -> list[int]:
    """Split `budget` so no length gets more than it needs and the rest is split evenly."""
    shares = [0] * len(lengths)
    remaining = budget
    order = sorted(range(len(lengths)), key=lengths.__getitem__)
    for position, index in enumerate(order):
        share = min(lengths[index], remaining // (len(lengths) - position))
        shares[index] = share
        remaining -= share
    return shares
