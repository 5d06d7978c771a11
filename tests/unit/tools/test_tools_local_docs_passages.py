"""Splitting documents into passages for the BM25 index."""

from __future__ import annotations

from tools.local_docs import split_passages, to_hit

GUIDE = """# Deployment guide

Intro paragraph about deploying.

## Database

Postgres holds the checkpoints.

Redis is not needed.

## Scaling

Run two workers per core.
"""


def test_each_heading_starts_a_passage_titled_with_document_and_section() -> None:
    passages = split_passages("ops/guide.md", GUIDE)

    assert [(p.title, p.text) for p in passages] == [
        ("Deployment guide", "Intro paragraph about deploying."),
        (
            "Deployment guide > Database",
            "Postgres holds the checkpoints.\n\nRedis is not needed.",
        ),
        ("Deployment guide > Scaling", "Run two workers per core."),
    ]
    assert {p.path for p in passages} == {"ops/guide.md"}


def test_a_file_without_headings_is_titled_by_its_name() -> None:
    [passage] = split_passages("notes/meeting-2026.txt", "Just some notes.")

    assert passage.title == "meeting-2026"


def test_passages_never_exceed_the_size_limit() -> None:
    text = "\n\n".join(f"Paragraph {i} " + "word " * 40 for i in range(30))
    text += "\n\n" + "x" * 1000  # one paragraph longer than the limit

    passages = split_passages("long.md", text, max_chars=300)

    assert len(passages) > 10
    assert max(len(p.text) for p in passages) <= 300
    assert "".join(p.text for p in passages).count("Paragraph") == 30


def test_an_empty_file_gives_no_passages() -> None:
    assert split_passages("empty.md", "\n\n  \n") == []


def test_a_passage_cites_its_file_with_a_local_url() -> None:
    [passage] = split_passages("ops/guide.md", "Text.")

    hit = to_hit(passage)

    assert (hit.url, hit.meta) == ("local://ops/guide.md", "ops/guide.md")
