"""Quotes offered as choices (agents/grounding/choices.py): each one a verbatim sentence of
the item it is offered for, the schema a grammar can hold, and the verifier still the judge."""

from __future__ import annotations

import jsonschema
import pytest

from agents.grounding.choices import (
    MAX_CHOICE_CHARS,
    MAX_CHOICES,
    cited_answer_schema,
    quote_choices,
)
from agents.grounding.evidence import Evidence, NewEvidence, add_evidence, join_sentences
from agents.grounding.verify import CitationClaim, CitedAnswer, verify_answer
from agents.prompts import shown_evidence
from app.settings import Settings
from calls.local_grammar import bounded

LYON = (
    "Lyon is the third-largest city of France. It lies where the Rhône and the Saône meet. "
    "Its old town is on the UNESCO list."
)
CURIE = ["Marie Curie was a physicist and chemist.", "Yes.", "She won two Nobel Prizes."]


def _ledger() -> dict[str, Evidence]:
    curie, spans = join_sentences(CURIE)
    _, ledger = add_evidence(
        {},
        [
            NewEvidence("n1", "wikipedia", "Lyon", LYON, url="https://w.example/Lyon"),
            NewEvidence("n1", "local_corpus", "Curie", curie, path="c/curie", sentences=spans),
        ],
    )
    return ledger


def test_each_choice_is_a_sentence_of_its_own_item_of_three_words_or_more() -> None:
    ledger = _ledger()

    choices = quote_choices(ledger, ledger)

    assert choices == {
        "E1": [
            "Lyon is the third-largest city of France.",
            "It lies where the Rhône and the Saône meet.",
            "Its old town is on the UNESCO list.",
        ],
        # Sentence ids from the source: "Yes." is too short to quote.
        "E2": ["Marie Curie was a physicist and chemist.", "She won two Nobel Prizes."],
    }


def test_a_sentence_the_prompt_cut_off_is_not_offered() -> None:
    long = "Lyon is a city. " + "It has many old streets and squares. " * 20
    _, ledger = add_evidence({}, [NewEvidence("n1", "wikipedia", "Lyon", long)])

    shown = shown_evidence(ledger, 250)
    choices = quote_choices(ledger, shown)

    assert shown["E1"]["text"].endswith("…[truncated]")
    assert choices["E1"]
    assert all(c in shown["E1"]["text"] and c in ledger["E1"]["text"] for c in choices["E1"])
    assert not any("truncated" in c for c in choices["E1"])


def test_choices_are_bounded_in_length_and_number() -> None:
    words = " ".join(["word"] * 100)
    texts = [f"Item {i} says {words}. It says more. And more again." for i in range(30)]
    _, ledger = add_evidence(
        {}, [NewEvidence("n1", "wikipedia", f"Page {i}", t) for i, t in enumerate(texts)]
    )

    choices = quote_choices(ledger, ledger)

    assert sum(map(len, choices.values())) == MAX_CHOICES  # 20 items of 3 sentences
    assert list(choices) == [f"E{i}" for i in range(1, 21)]
    for evidence_id, offered in choices.items():
        assert all(len(c) <= MAX_CHOICE_CHARS for c in offered)
        assert all(c in ledger[evidence_id]["text"] for c in offered)
    assert choices["E1"][0].startswith("Item 0 says word")
    assert len(choices["E1"][0]) > 250


def test_every_citation_the_schema_allows_verifies_and_one_it_does_not_allow_is_rejected() -> None:
    ledger = _ledger()
    schema = cited_answer_schema(quote_choices(ledger, ledger))
    # Every allowed (id, quote) pair, in a reply the schema (as the grammar bounds it) accepts.
    allowed = [
        (option["properties"]["evidence_id"]["const"], quote)
        for option in schema["properties"]["citations"]["items"]["anyOf"]
        for quote in option["properties"]["quote"]["enum"]
    ]
    for evidence_id, quote in allowed:
        reply = {
            "answer": "A claim. [1]",
            "citations": [{"marker": 1, "evidence_id": evidence_id, "quote": quote}],
        }
        jsonschema.validate(reply, schema)
        jsonschema.validate(reply, bounded(schema, 512))
        verified = verify_answer(CitedAnswer.model_validate(reply), ledger)
        assert [c["evidence_id"] for c in verified["citations"]] == [evidence_id]
    # A sentence of E1 named as E2's: the schema refuses it, and so does the verifier.
    crossed = {"marker": 1, "evidence_id": "E2", "quote": allowed[0][1]}
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({"answer": "A claim. [1]", "citations": [crossed]}, schema)
    claim = CitationClaim.model_validate(crossed)
    verified = verify_answer(CitedAnswer(answer="A claim. [1]", citations=[claim]), ledger)
    assert verified["citations"] == []


@pytest.mark.parametrize(
    ("values", "expected"),
    [
        ({"model": "local"}, True),
        ({"model": "google_genai:gemini-2.5-flash"}, False),
        ({"model": "google_genai:gemini-2.5-flash", "model_responder": "local"}, True),
        ({"model": "local", "quote_choices": False}, False),
    ],
)
def test_quote_choices_are_on_by_default_exactly_when_the_responder_is_local(
    values: dict[str, object], expected: bool
) -> None:
    assert Settings(_env_file=None, **values).quote_choices is expected  # type: ignore[arg-type]


def test_a_sentence_with_a_title_in_double_quotes_offers_its_longest_piece_without_one() -> None:
    text = 'He wrote the novel "The Riddle of the Sands", and a Fenian smuggled guns in "Asgard".'
    _, ledger = add_evidence({}, [NewEvidence("n1", "wikipedia", "Childers", text)])

    choices = quote_choices(ledger, ledger)

    assert choices == {"E1": ["and a Fenian smuggled guns in"]}
    assert all(c in text for c in choices["E1"])


def test_the_grammar_bounds_drop_enum_values_a_grammar_literal_cannot_hold() -> None:
    schema = {"type": "object", "properties": {"q": {"enum": ['say "hi"', "plain", "a\\b"]}}}
    only_bad = {"type": "object", "properties": {"q": {"enum": ['say "hi"']}}}

    assert bounded(schema, 100)["properties"]["q"] == {"enum": ["plain"]}
    assert bounded(only_bad, 100)["properties"]["q"] == {"type": "string", "maxLength": 100}
