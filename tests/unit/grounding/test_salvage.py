"""A cited reply cut short by the token limit: its answer and its whole citations are kept,
the citation the cut fell in never is; prose and other JSON are not read as one."""

from __future__ import annotations

import json

import pytest

from agents.grounding.salvage import salvaged

WHOLE = json.dumps(
    {
        "answer": "Robert Erskine Childers [1][2]",
        "citations": [
            {"marker": 1, "evidence_id": "E2", "quote": "Childers was an English writer."},
            {"marker": 2, "evidence_id": "E4", "quote": "He was born in London in 1870."},
        ],
    }
)


def _cut_after(text: str, part: str) -> str:
    return text[: text.index(part) + len(part)]


def test_a_whole_reply_is_read_as_it_is() -> None:
    cited = salvaged(WHOLE)

    assert cited is not None
    assert cited.answer == "Robert Erskine Childers [1][2]"
    assert [c.marker for c in cited.citations] == [1, 2]


def test_a_cut_inside_a_quote_drops_that_citation_only() -> None:
    cited = salvaged(_cut_after(WHOLE, "He was born"))

    assert cited is not None
    assert cited.answer == "Robert Erskine Childers [1][2]"
    assert [(c.marker, c.quote) for c in cited.citations] == [
        (1, "Childers was an English writer.")
    ]


@pytest.mark.parametrize(
    ("after", "markers"),
    [
        ('writer."}', [1]),
        ('writer."},', [1]),
        ('writer."}, ', [1]),
        ('1870."}', [1, 2]),
        ('1870."}]', [1, 2]),
    ],
)
def test_a_cut_after_a_citation_closed_keeps_it(after: str, markers: list[int]) -> None:
    cited = salvaged(_cut_after(WHOLE, after))

    assert cited is not None
    assert [c.marker for c in cited.citations] == markers


def test_a_cut_inside_a_citation_s_id_or_before_its_quote_drops_it() -> None:
    for part in ('"marker": 2, "evidence_id": "E', '"marker": 2, "evidence_id": "E4"'):
        cited = salvaged(_cut_after(WHOLE, part))
        assert cited is not None
        assert [c.marker for c in cited.citations] == [1]


def test_a_cut_inside_the_answer_keeps_what_was_written_of_it() -> None:
    cited = salvaged('{"answer": "Robert Erskine Chil')

    assert cited is not None
    assert (cited.answer, cited.citations) == ("Robert Erskine Chil", [])


@pytest.mark.parametrize(
    "text",
    [
        "Robert Erskine Childers was English.",  # prose: the caller keeps it as it is
        '{"citations": [{"marker": 1, "evidence_id": "E2", "quote": "x y z"}]}',  # no answer
        '{"answer": 42}',
        "{",
        "",
    ],
)
def test_what_is_not_the_start_of_a_cited_answer_is_not_read_as_one(text: str) -> None:
    assert salvaged(text) is None


def test_a_citation_that_does_not_validate_is_left_out_not_fatal() -> None:
    text = json.dumps(
        {
            "answer": "A [1][2]",
            "citations": [
                {"marker": 0, "evidence_id": "E1", "quote": "a b c"},  # markers start at 1
                {"marker": 2, "evidence_id": "E1", "quote": "d e f"},
            ],
        }
    )

    cited = salvaged(text)

    assert cited is not None
    assert [c.marker for c in cited.citations] == [2]
