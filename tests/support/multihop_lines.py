"""Questions as lines of the multi-hop JSON Lines format (HotpotQA's shape), for the tests of
what reads and scores such lines: a HotpotQA question to vary, and a line of each of the other
two sets as their shared files have them."""

from __future__ import annotations

import copy
from typing import Any

_BOOK: dict[str, Any] = {
    "id": "q1",
    "question": "Who wrote it?",
    "answer": "Ann",
    "type": "bridge",
    "level": "hard",
    "supporting_facts": [["Book", 1], ["Ann", 0]],
    "context": [
        ["Book", ["Book is a novel.", " It was written by Ann."]],
        ["Ann", ["Ann is a writer."]],
    ],
}


def book_line(**changes: Any) -> dict[str, Any]:
    """A bridge question (who wrote Book: Ann) over its two supporting paragraphs, a fresh copy
    with `changes` to its fields."""
    return copy.deepcopy(_BOOK) | changes


# A 2WikiMultihopQA line as the shared file has it: `level` null, one paragraph given twice.
TWOWIKI_LINE: dict[str, Any] = {
    "id": "w1",
    "question": "Which film did Kora Lind direct in 1951?",
    "answer": "Cold Moon",
    "type": "compositional",
    "level": None,
    "supporting_facts": [["Cold Moon", 0], ["Kora Lind", 0]],
    "context": [
        ["Cold Moon", ["Cold Moon is a 1951 film directed by Kora Lind.", " It is lost."]],
        ["Kora Lind", ["Kora Lind was a film director."]],
        ["Cold Moon", ["Cold Moon is a 1951 film directed by Kora Lind.", " It is lost."]],
    ],
    "extra": {"official_dev_index": 8},
}
# A MuSiQue line: two paragraphs titled "Liberal Party", the second the supporting one; its
# answer is "the Liberals", the top passage's title (what the scripted reader answers) right by
# an alias only.
MUSIQUE_LINE: dict[str, Any] = {
    "id": "2hop__1_2",
    "question": "Which party did Robert Menzies found in 1944?",
    "answer": "the Liberals",
    "type": "2hop",
    "level": None,
    "supporting_facts": [["Liberal Party", 0], ["Leeds", 0]],
    "context": [
        ["Liberal Party", ["The Liberal Party of Canada is a party."]],
        ["Leeds", ["Leeds is a city."]],
        ["Liberal Party", ["The Liberal Party was founded by Robert Menzies in 1944."]],
    ],
    "extra": {"supporting_paragraph_idx": [2, 1], "answer_aliases": ["Liberal Party"]},
}
