"""Corroboration: an answer that other complete paths gave too carries their verified quotes.

Paths that reach the same answer by different steps have read different evidence. The chosen
answer keeps its own citations and gains, sentence by sentence, the verified citations of every
other path whose answer agrees with it (`answer_key`: the same text once markers are removed
and it is normalised as the verifier normalises quotes). A citation joins under a new marker
at the end of the sentence it backed in its own answer (same sentence index; answers that split
into a different number of sentences pool nothing), at most `MAX_MARKERS_PER_SENTENCE` markers
a sentence, and never twice for the same quote of the same source.

Nothing is taken on trust: the merged answer is verified again (agents/grounding/verify.py)
against the evidence of all the paths involved, numbered afresh (the chosen path's items
first), so a pooled citation is kept only when its quote holds in the item it names.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TypeVar

from agents.grounding.evidence import Evidence, path_ledger
from agents.grounding.quotes import fold
from agents.grounding.sentences import MARKER, split_sentences
from agents.grounding.verify import (
    Citation,
    CitationClaim,
    CitedAnswer,
    VerifiedAnswer,
    verify_answer,
)

MAX_MARKERS_PER_SENTENCE = 4

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class PathAnswer:
    """One complete path's answer as its verifier left it, and the evidence it was checked on
    (numbered as that path's responder saw it)."""

    answer: str
    citations: Sequence[Citation]
    ledger: Mapping[str, Evidence]


def answer_key(answer: str) -> str:
    """What two answers must share to agree: the text without markers, normalised (NFKC,
    case, punctuation, whitespace)."""
    return fold(MARKER.sub(" ", answer), full=True).text


def agrees(a: str, b: str) -> bool:
    """Whether two answers say the same, by `answer_key` (an empty answer agrees with none)."""
    key = answer_key(a)
    return bool(key) and key == answer_key(b)


def agreeing_groups(items: Iterable[T], answer_of: Callable[[T], str]) -> list[list[T]]:
    """`items` grouped by agreeing answers (`agrees` with the group's first member), groups in
    the order of their first member, members in their own order. An item whose answer is
    empty agrees with none: it is a group of its own."""
    groups: list[list[T]] = []
    for item in items:
        answer = answer_of(item)
        group = next((g for g in groups if agrees(answer_of(g[0]), answer)), None)
        if group is None:
            groups.append([item])
        else:
            group.append(item)
    return groups


def corroborated(
    chosen: PathAnswer, others: Sequence[PathAnswer]
) -> tuple[VerifiedAnswer, dict[str, Evidence]]:
    """The chosen answer with the verified citations of the `others` that agree with it added,
    verified again; and the merged evidence it was verified on."""
    agreeing = [o for o in others if agrees(o.answer, chosen.answer)]
    ledger = path_ledger(
        [*chosen.ledger.values(), *(item for o in agreeing for item in o.ledger.values())]
    )
    renumbered = {(item["source"]["id"], item["text"]): key for key, item in ledger.items()}

    def new_id(citation: Citation, of: PathAnswer) -> str | None:
        item = of.ledger.get(citation["evidence_id"])
        return None if item is None else renumbered.get((item["source"]["id"], item["text"]))

    claims = [
        CitationClaim(marker=c["marker"], evidence_id=evidence_id, quote=c["quote"])
        for c in chosen.citations
        if (evidence_id := new_id(c, chosen)) is not None
    ]
    sentences = split_sentences(chosen.answer)
    ends = _sentence_ends(chosen.answer, sentences)
    markers = [_markers(sentence) for sentence in sentences]
    quoted = [
        {_quote_key(c, chosen) for c in chosen.citations if c["marker"] in found}
        for found in markers
    ]
    added: list[list[int]] = [[] for _ in sentences]
    next_marker = 1 + max((m for found in markers for m in found), default=0)
    for other in agreeing:
        theirs = [_markers(sentence) for sentence in split_sentences(other.answer)]
        if ends is None or len(theirs) != len(sentences):
            continue
        for citation in other.citations:
            index = next((i for i, found in enumerate(theirs) if citation["marker"] in found), None)
            evidence_id = new_id(citation, other)
            if index is None or evidence_id is None:
                continue
            key = _quote_key(citation, other)
            if key in quoted[index] or len(markers[index]) + len(added[index]) >= (
                MAX_MARKERS_PER_SENTENCE
            ):
                continue
            quoted[index].add(key)
            added[index].append(next_marker)
            claims.append(
                CitationClaim(marker=next_marker, evidence_id=evidence_id, quote=citation["quote"])
            )
            next_marker += 1
    text = chosen.answer
    if ends is not None:
        for index in reversed(range(len(sentences))):
            inserted = "".join(f"[{m}]" for m in added[index])
            text = text[: ends[index]] + inserted + text[ends[index] :]
    return verify_answer(CitedAnswer(answer=text, citations=claims), ledger), ledger


def _markers(sentence: str) -> set[int]:
    return {int(match.group(1)) for match in MARKER.finditer(sentence)}


def _quote_key(citation: Citation, of: PathAnswer) -> tuple[str, str]:
    item = of.ledger.get(citation["evidence_id"])
    source = item["source"]["id"] if item is not None else citation["source"]["id"]
    return source, fold(citation["quote"], full=True).text


def _sentence_ends(text: str, sentences: Sequence[str]) -> list[int] | None:
    """Where each sentence ends in `text`, or None when one cannot be found as written (the
    splitter joins a stray marker to its neighbour with a space)."""
    ends: list[int] = []
    cursor = 0
    for sentence in sentences:
        at = text.find(sentence, cursor)
        if at < 0:
            return None
        cursor = at + len(sentence)
        ends.append(cursor)
    return ends
