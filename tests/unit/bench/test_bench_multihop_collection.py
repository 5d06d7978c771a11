"""Reading a citation of the pooled collection back as supporting facts: the sentences of the
paragraph that its quote overlaps, whitespace and case aside."""

from __future__ import annotations

from bench.multihop_collection import quoted_sentences
from bench.multihop_data import Paragraph, paragraph_document

DOC = paragraph_document(
    Paragraph(
        id="p", title="Ann Smith", sentences=("Ann Smith wrote Lanterns.", "  She lives\nin Leeds.")
    ),
    "Ann Smith",
)


def test_a_quote_names_the_sentences_it_overlaps() -> None:
    assert quoted_sentences(DOC, "Ann Smith wrote") == [0]
    assert quoted_sentences(DOC, "she lives in leeds") == [1]
    assert quoted_sentences(DOC, "wrote Lanterns. She lives") == [0, 1]


def test_a_quote_not_in_the_paragraph_names_none() -> None:
    assert quoted_sentences(DOC, "Ann Smith wrote Moonlight") == []
    assert quoted_sentences(DOC, "   ") == []
