"""Passages: cut on headings and paragraphs, never across pages, with ids that name the page."""

from __future__ import annotations

from testkit.pdfs import text_pdf
from tools.documents.passages import passages
from tools.documents.reading import Page, ReadDocument, read_document


def _text(text: str) -> ReadDocument:
    return ReadDocument("t", "markdown", "0" * 64, [Page(None, text)])


def test_a_heading_starts_a_passage_and_names_what_follows() -> None:
    found = passages(_text("Intro line.\n\n# Methods\n\nWe watched.\n\n## Results\n\nThey dove."))

    assert [(p.heading, p.text) for p in found] == [
        (None, "Intro line."),
        ("Methods", "We watched."),
        ("Results", "They dove."),
    ]
    assert [p.local_id for p in found] == ["p0.1", "p0.2", "p0.3"]


def test_short_paragraphs_gather_and_long_ones_are_cut_between_sentences() -> None:
    long = " ".join(f"Sentence number {i} is here." for i in range(40))
    found = passages(_text(f"One.\n\nTwo.\n\n{long}"), max_chars=200)

    assert found[0].text.startswith("One.\n\nTwo.")
    assert all(len(p.text) <= 200 for p in found)
    assert " ".join(p.text for p in found[1:]).replace("\n\n", " ").endswith("39 is here.")
    assert all(p.text.endswith(".") for p in found)


def test_a_passage_never_spans_two_pages_and_its_id_names_the_page() -> None:
    document = read_document(
        "paper.pdf", text_pdf([["# Intro", "Otters use stones."], ["They crack shells."]])
    )

    found = passages(document)

    assert [(p.page, p.local_id, p.heading, p.text) for p in found] == [
        (1, "p1.1", "Intro", "Otters use stones."),
        (2, "p2.1", "Intro", "They crack shells."),
    ]


def test_the_same_content_gives_the_same_passages() -> None:
    assert passages(_text("a\n\nb")) == passages(_text("a\n\nb"))


def test_a_heading_that_no_text_follows_is_a_passage_of_its_own() -> None:
    found = passages(_text("# Part one\n\n## Otters\n\nThey dove.\n\n# Director Photo Term 1952"))

    assert [(p.heading, p.text) for p in found] == [
        ("Part one", "Part one"),
        ("Otters", "They dove."),
        ("Director Photo Term 1952", "Director Photo Term 1952"),
    ]


def test_a_document_of_one_long_heading_line_keeps_all_its_text() -> None:
    line = "# " + " ".join(f"Row {i} served 1952 to 1956." for i in range(60))

    found = passages(_text(line), max_chars=200)

    assert found
    assert all(len(p.text) <= 200 for p in found)
    assert " ".join(p.text for p in found) == line.removeprefix("# ")
