"""Corroboration: the chosen answer gains the verified quotes of the paths that agree with it,
under new markers on the sentence they backed, verified again; disagreeing answers add nothing."""

from __future__ import annotations

import pytest

from agents.grounding.corroborate import (
    MAX_MARKERS_PER_SENTENCE,
    PathAnswer,
    agreeing_groups,
    agrees,
    answer_key,
    corroborated,
)
from agents.grounding.evidence import Evidence, NewEvidence, add_evidence, join_sentences
from agents.grounding.verify import CitationClaim, CitedAnswer, verify_answer

ROTH = ["Henry Roth was an American novelist.", "He wrote Call It Sleep in 1934."]
CHILDERS = [
    "Robert Erskine Childers was an English-born author.",
    "He wrote The Riddle of the Sands.",
    "He was born in Mayfair, London.",
]


def _ledger(node_id: str, *docs: tuple[str, list[str]]) -> dict[str, Evidence]:
    passages = []
    for title, sentences in docs:
        text, spans = join_sentences(sentences)
        passages.append(
            NewEvidence(
                node_id, "local_corpus", title, text, url=f"corpus://{title}", sentences=spans
            )
        )
    _, ledger = add_evidence({}, passages)
    return ledger


def _path(
    answer: str, claims: list[tuple[int, str, str]], ledger: dict[str, Evidence]
) -> PathAnswer:
    """A path's answer as its responder's verifier left it."""
    verified = verify_answer(
        CitedAnswer(
            answer=answer,
            citations=[CitationClaim(marker=m, evidence_id=e, quote=q) for m, e, q in claims],
        ),
        ledger,
    )
    return PathAnswer(verified["answer"], verified["citations"], ledger)


def test_answers_agree_by_their_normalised_text_without_markers() -> None:
    assert answer_key("Robert Erskine Childers[1]") == answer_key("robert  erskine childers.")
    assert agrees("Robert Erskine Childers[1]", "Robert Erskine Childers [2][3]")
    assert not agrees("Henry Roth[1]", "Robert Erskine Childers[1]")
    assert not agrees("", "")
    assert not agrees("[1]", "[2]")


def test_agreeing_answers_form_groups_in_order_and_empty_answers_stand_alone() -> None:
    items = [
        ("a", "Henry Roth[1]"),
        ("b", ""),
        ("c", "Robert Erskine Childers"),
        ("d", "henry roth."),
        ("e", ""),
        ("f", "Childers"),
        ("g", "ROBERT ERSKINE CHILDERS[2][3]"),
    ]
    groups = agreeing_groups(items, lambda item: item[1])
    assert [[name for name, _ in group] for group in groups] == [
        ["a", "d"],
        ["b"],
        ["c", "g"],
        ["e"],
        ["f"],
    ]
    assert agreeing_groups([], lambda item: str(item)) == []


def test_an_agreeing_path_adds_its_verified_quotes_under_new_markers() -> None:
    first = _ledger("n1.1", ("Robert Erskine Childers", CHILDERS))
    # The other path read Henry Roth first, then Childers: its own numbering (E2 is Childers).
    second = _ledger(
        "n1.2", ("Henry Roth", ROTH), ("Robert Erskine Childers", CHILDERS[:1] + CHILDERS[2:])
    )
    chosen = _path("Robert Erskine Childers[1]", [(1, "E1", CHILDERS[0])], first)
    other = _path(
        "Robert Erskine Childers[1][2]",
        [(1, "E1", ROTH[0]), (2, "E2", "He was born in Mayfair, London.")],
        second,
    )

    verified, ledger = corroborated(chosen, [other])

    assert verified["answer"] == "Robert Erskine Childers[1][2][3]"
    assert [(c["marker"], c["quote"]) for c in verified["citations"]] == [
        (1, CHILDERS[0]),
        (2, ROTH[0]),
        (3, "He was born in Mayfair, London."),
    ]
    # Renumbered over both paths, the chosen path's items first; each cites the node that read it.
    assert [ledger[c["evidence_id"]]["source"]["title"] for c in verified["citations"]] == [
        "Robert Erskine Childers",
        "Henry Roth",
        "Robert Erskine Childers",
    ]
    assert [c["node_id"] for c in verified["citations"]] == ["n1.1", "n1.2", "n1.2"]
    assert verified["citations"][2]["sent_ids"] == [1]  # its own passage's sentence numbering
    assert verified["groundedness"] == 1.0
    assert verified["rejected"] == []


@pytest.mark.parametrize(
    ("answer", "claims"),
    [
        pytest.param(
            "robert erskine childers [4]", [(4, "E1", CHILDERS[0].upper())], id="the_quote_cited"
        ),
        pytest.param("Henry Roth[1]", [(1, "E2", ROTH[0])], id="a_disagreeing_answer"),
    ],
)
def test_another_path_adds_nothing_with(answer: str, claims: list[tuple[int, str, str]]) -> None:
    ledger = _ledger("n1.1", ("Robert Erskine Childers", CHILDERS), ("Henry Roth", ROTH))
    chosen = _path("Robert Erskine Childers[1]", [(1, "E1", CHILDERS[0])], ledger)

    verified, _ = corroborated(chosen, [_path(answer, claims, ledger)])

    assert verified["answer"] == "Robert Erskine Childers[1]"
    assert [c["quote"] for c in verified["citations"]] == [CHILDERS[0]]


def test_quotes_join_the_sentence_they_backed() -> None:
    ledger = _ledger("n1", ("Henry Roth", ROTH), ("Robert Erskine Childers", CHILDERS))
    chosen = _path("Childers was English [1]. Roth was American.", [(1, "E2", CHILDERS[0])], ledger)
    other = _path("Childers was English. Roth was American [1].", [(1, "E1", ROTH[0])], ledger)

    verified, _ = corroborated(chosen, [other])

    # The second sentence was unsupported; the other path's quote now backs it.
    assert verified["answer"] == "Childers was English [1]. Roth was American.[2]"
    assert verified["unsupported"] == []
    assert verified["groundedness"] == 1.0
    assert [(c["marker"], c["evidence_id"]) for c in verified["citations"]] == [
        (1, "E2"),
        (2, "E1"),
    ]


def test_a_different_sentence_count_pools_nothing() -> None:
    ledger = _ledger("n1", ("Henry Roth", ROTH), ("Robert Erskine Childers", CHILDERS))
    chosen = _path("Childers was English [1]", [(1, "E2", CHILDERS[0])], ledger)
    # The same words, but punctuation splits them into two sentences.
    other = _path("Childers. Was English [1]", [(1, "E1", ROTH[0])], ledger)

    assert agrees(chosen.answer, other.answer)
    verified, _ = corroborated(chosen, [other])

    assert verified["answer"] == "Childers was English [1]"
    assert len(verified["citations"]) == 1


def test_markers_per_sentence_are_bounded() -> None:
    sentences = [f"Childers wrote book number {n} of the series." for n in range(10)]
    ledger = _ledger("n1", ("Childers books", sentences))
    chosen = _path("Childers[1]", [(1, "E1", sentences[0])], ledger)
    others = [_path("Childers[1]", [(1, "E1", sentence)], ledger) for sentence in sentences[1:]]

    verified, _ = corroborated(chosen, others)

    assert len(verified["citations"]) == MAX_MARKERS_PER_SENTENCE
    assert verified["answer"] == "Childers[1][2][3][4]"


def test_pooled_citations_are_verified_again() -> None:
    """A citation whose evidence item the other path's ledger does not hold is dropped, and one
    whose quote does not hold in the merged ledger is rejected like any other."""
    ledger = _ledger("n1.1", ("Robert Erskine Childers", CHILDERS))
    chosen = _path("Robert Erskine Childers[1]", [(1, "E1", CHILDERS[0])], ledger)
    verified_other = _path("Robert Erskine Childers[1]", [(1, "E1", CHILDERS[1])], ledger)
    forged = PathAnswer(
        verified_other.answer,
        [{**verified_other.citations[0], "quote": "He was born in Dublin, Ireland."}],
        ledger,
    )
    unknown = PathAnswer(
        verified_other.answer, [{**verified_other.citations[0], "evidence_id": "E9"}], ledger
    )

    verified, _ = corroborated(chosen, [forged, unknown])

    assert [c["quote"] for c in verified["citations"]] == [CHILDERS[0]]
    assert [(r["marker"], r["reason"]) for r in verified["rejected"]] == [(2, "quote_not_found")]
    assert verified["answer"] == "Robert Erskine Childers[1]"
