"""Evidence items: the passages a run's tools returned, each under a run-stable id ("E1", "E2",
...) that an answer's citations name, so a quote can be checked against the very text the model
saw (agents/grounding/verify.py).

A run keeps its evidence on the tree, as plain data a checkpointer saves: each step's node holds
the passages its tool calls returned (`step_evidence`), under run-stable ids `<node id>/<k>`.
A prompt numbers the evidence of one path E1, E2, ... (`path_ledger`, through `add_evidence`):

- the same passages in the same order get the same ids, so a path's numbering depends only on
  what its steps found, never on when other branches finished;
- an id is never reused: a ledger only grows, and a new id is one more than the largest kept;
- a passage already numbered (same source id, same text) keeps its number, so one passage
  retrieved by two steps of a path is one item.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from typing_extensions import TypedDict

EVIDENCE_MAX_CHARS = 1500
"""An item keeps at most this much of a passage: the prefix the model was shown."""

_ID = re.compile(r"E([1-9][0-9]*)")
# What a reader could take for an item's header at the start of a line: "[E9]", "[ e9 ]", and
# the same in full-width brackets (NFKC folds those to ASCII before the check).
_HEADER_LIKE = re.compile(r"\s*\[\s*e\s*\d+\s*\]", re.IGNORECASE)
_ESCAPE = "\\"


class EvidenceSource(TypedDict):
    """Where a passage came from. `id` names the document: its URL, else its title or path."""

    id: str
    title: str
    url: str


class SentenceSpan(TypedDict):
    """One sentence of an item's text: `text[start:end]`, numbered as its source numbers it."""

    sent_id: int
    start: int
    end: int


class Evidence(TypedDict):
    """One passage a tool returned, as the model saw it."""

    id: str
    node_id: str
    tool: str
    source: EvidenceSource
    text: str
    sentences: list[SentenceSpan]


@dataclass(frozen=True, slots=True)
class NewEvidence:
    """A passage to record. `sentences` is empty unless the source has sentence structure (the
    local multi-hop corpus does, so a quote maps to a (title, sent_id) pair)."""

    node_id: str
    tool: str
    title: str
    text: str
    url: str = ""
    path: str = ""
    sentences: Sequence[SentenceSpan] = ()


def evidence_source(title: str, url: str = "", path: str = "") -> EvidenceSource:
    """The source record of a document: its id is the URL if any, else the title, else the
    path."""
    return EvidenceSource(id=url or title or path, title=title, url=url)


def join_sentences(sentences: Sequence[str]) -> tuple[str, list[SentenceSpan]]:
    """One text from a source's sentences, joined by spaces, with the span of each (sentence
    ids are positions in `sentences`, as in the multi-hop corpus's supporting facts)."""
    spans: list[SentenceSpan] = []
    parts: list[str] = []
    offset = 0
    for sent_id, sentence in enumerate(sentences):
        if parts:
            offset += 1
        spans.append(SentenceSpan(sent_id=sent_id, start=offset, end=offset + len(sentence)))
        parts.append(sentence)
        offset += len(sentence)
    return " ".join(parts), spans


def step_evidence(node_id: str, passages: Iterable[NewEvidence]) -> list[Evidence]:
    """The passages one step's tool calls returned, in order, as items with the run-stable ids
    `<node_id>/1`, `<node_id>/2`, ... (an identical passage once)."""
    _, items = add_evidence({}, passages)
    return [
        relabelled(item, f"{node_id}/{number}", node_id)
        for number, item in enumerate(items.values(), start=1)
    ]


def relabelled(item: Evidence, evidence_id: str, node_id: str) -> Evidence:
    """The same passage under another id, as found by another node."""
    return Evidence(
        id=evidence_id,
        node_id=node_id,
        tool=item["tool"],
        source=item["source"],
        text=item["text"],
        sentences=item["sentences"],
    )


def path_ledger(items: Iterable[Evidence]) -> dict[str, Evidence]:
    """The evidence of a path as one prompt numbers it: E1, E2, ... in the given order (the
    path's steps, root first), each passage once. Every item keeps its `node_id`."""
    _, ledger = add_evidence(
        {},
        (
            NewEvidence(
                node_id=item["node_id"],
                tool=item["tool"],
                title=item["source"]["title"],
                text=item["text"],
                url=item["source"]["url"],
                path=item["source"]["id"],
                sentences=item["sentences"],
            )
            for item in items
        ),
    )
    return ledger


def add_evidence(
    ledger: Mapping[str, Evidence], passages: Iterable[NewEvidence]
) -> tuple[list[str], dict[str, Evidence]]:
    """The id of each passage, in order, and the new items to merge into the ledger.

    A passage identical to a kept one, or to an earlier one in `passages`, gets that item's id
    and adds nothing.
    """
    known = {(item["source"]["id"], item["text"]): item["id"] for item in ledger.values()}
    next_number = 1 + max((_number(key) for key in ledger), default=0)
    ids: list[str] = []
    added: dict[str, Evidence] = {}
    for passage in passages:
        source = evidence_source(passage.title, passage.url, passage.path)
        text = passage.text[:EVIDENCE_MAX_CHARS]
        key = (source["id"], text)
        if key not in known:
            known[key] = f"E{next_number}"
            next_number += 1
            added[known[key]] = Evidence(
                id=known[key],
                node_id=passage.node_id,
                tool=passage.tool,
                source=source,
                text=text,
                sentences=_bounded_spans(passage.sentences, len(text)),
            )
        ids.append(known[key])
    return ids, added


def sentence_ids_for(evidence: Evidence, start: int, end: int) -> list[int]:
    """The ids of the sentences that overlap the character range `[start, end)` of the text."""
    ids: list[int] = []
    for span in evidence["sentences"]:
        if span["start"] < end and start < span["end"] and span["sent_id"] not in ids:
            ids.append(span["sent_id"])
    return ids


def render_evidence(items: Iterable[Evidence]) -> str:
    """Items as a prompt shows them, in the given order: a header line `[E3] <title> (<url>)`,
    then the text. The caller fences the block (agents/fencing.py).

    Only a header starts a line with an item id: a text line that could read as one is escaped
    with a backslash, and titles and URLs are kept to one line.
    """
    blocks: list[str] = []
    for item in items:
        title = " ".join(item["source"]["title"].split()) or "(untitled)"
        url = "".join(item["source"]["url"].split())
        header = f"[{item['id']}] {title} ({url})" if url else f"[{item['id']}] {title}"
        body = "\n".join(_inert(line) for line in item["text"].splitlines())
        blocks.append(f"{header}\n{body}" if body else header)
    return "\n\n".join(blocks)


def _number(evidence_id: str) -> int:
    match = _ID.fullmatch(evidence_id)
    return int(match.group(1)) if match else 0


def _bounded_spans(spans: Sequence[SentenceSpan], length: int) -> list[SentenceSpan]:
    """Spans cut to a text that was cut to `length`; a sentence cut off entirely is dropped."""
    kept: list[SentenceSpan] = []
    for span in spans:
        if not 0 <= span["start"] <= span["end"]:
            raise ValueError(f"bad sentence span {span}")
        if span["start"] < length:
            kept.append(
                SentenceSpan(
                    sent_id=span["sent_id"], start=span["start"], end=min(span["end"], length)
                )
            )
    return kept


def _inert(line: str) -> str:
    # Format characters (zero-width spaces, joiners) are invisible: a reader sees past them.
    visible = "".join(
        char for char in unicodedata.normalize("NFKC", line) if unicodedata.category(char) != "Cf"
    )
    return _ESCAPE + line if _HEADER_LIKE.match(visible) else line
