"""Quotes offered as choices: the responder's reply schema with, per evidence item, the
sentences of that item as the only quotes a citation may carry.

A small local model asked to copy words "verbatim" paraphrases them, and the verifier then
rejects every citation. Its replies are written under a grammar (calls/local_grammar.py), and
a grammar can hold a list of allowed strings: given this schema, every quote is one of the
item's own sentences by construction, and the model's work is to pick the sentence that backs
each claim. The verifier still checks every citation as for any model (a quote against the
item the citation names, the marker in the answer): the choices make a verbatim quote
possible, not a claim true.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from agents.grounding.evidence import Evidence
from agents.grounding.sentences import split_sentences
from agents.grounding.verify import CitationClaim, CitedAnswer

MAX_CHOICE_CHARS = 300
"""A longer sentence is offered cut at a word boundary (still a verbatim piece of the item)."""
MAX_CHOICES = 60
"""Choices across all items; the first items' sentences first, in order."""
MIN_WORDS = 3  # the verifier's shortest quote


def _sentences(shown: Evidence, whole: str) -> list[str]:
    """The sentences of an item's text as shown that are pieces of its whole text (a sentence
    the cut ran through, with the cut's mark, is not)."""
    text = shown["text"]
    if shown["sentences"]:
        pieces = [text[s["start"] : s["end"]].strip() for s in shown["sentences"]]
    else:
        pieces = split_sentences(text)
    return [piece for piece in pieces if piece and piece in whole]


# A grammar's string literals cannot hold these as llama.cpp's schema converter writes them.
_UNQUOTABLE = re.compile(r'["\\]')


def _bounded(sentence: str) -> str:
    """The sentence, or its longest piece without a double quote or a backslash (a title in
    quotes splits it), cut at a word boundary to `MAX_CHOICE_CHARS`: still verbatim."""
    piece = max((p.strip(" ,;:") for p in _UNQUOTABLE.split(sentence)), key=len)
    if len(piece) <= MAX_CHOICE_CHARS:
        return piece
    cut = piece[:MAX_CHOICE_CHARS]
    return cut[: cut.rfind(" ")] if " " in cut else cut


def quote_choices(
    ledger: Mapping[str, Evidence], shown: Mapping[str, Evidence]
) -> dict[str, list[str]]:
    """Per item id, the sentences of the item's text as the prompt shows it (`shown`, cut to
    fit; `ledger` holds the whole items), each at least `MIN_WORDS` words, at most
    `MAX_CHOICES` in all; items without one are left out."""
    choices: dict[str, list[str]] = {}
    room = MAX_CHOICES
    for evidence_id, item in shown.items():
        kept: list[str] = []
        for sentence in map(_bounded, _sentences(item, ledger[evidence_id]["text"])):
            if len(kept) == room:
                break
            if len(sentence.split()) >= MIN_WORDS and sentence not in kept:
                kept.append(sentence)
        if kept:
            choices[evidence_id] = kept
            room -= len(kept)
        if room <= 0:
            break
    return choices


def cited_answer_schema(choices: Mapping[str, list[str]]) -> dict[str, Any]:
    """`CitedAnswer`'s JSON schema with each citation one of: an item's id and one of its
    sentences."""
    claim = CitationClaim.model_json_schema()["properties"]
    options = [
        {
            "type": "object",
            "properties": {
                "marker": claim["marker"],
                "evidence_id": {
                    "const": evidence_id,
                    "description": claim["evidence_id"].get("description", ""),
                },
                "quote": {"enum": sentences, "description": "One sentence of that item."},
            },
            "required": ["marker", "evidence_id", "quote"],
        }
        for evidence_id, sentences in choices.items()
    ]
    answer = CitedAnswer.model_json_schema()["properties"]["answer"]
    return {
        "title": "CitedAnswer",
        "type": "object",
        "properties": {
            "answer": answer,
            "citations": {
                "type": "array",
                "items": {"anyOf": options},
                "description": "For each marker, the evidence sentence it quotes.",
            },
        },
        "required": ["answer", "citations"],
    }
