"""Reading the multi-hop JSON Lines format (HotpotQA's shape, and 2WikiMultihopQA's and
MuSiQue's differences), the vendored sets, and corpus documents."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from bench.multihop_data import (
    DATASETS,
    HOTPOTQA_DEV_100,
    MUSIQUE_DEV_100,
    TWOWIKI_DEV_250,
    FormatError,
    Paragraph,
    Question,
    data_path,
    dataset_name,
    documents,
    load,
    parse_question,
    short_id,
)
from tests.support.multihop_lines import MUSIQUE_LINE, TWOWIKI_LINE, book_line

README_SHA256 = "ad99ca54eb53f1ace984c7dffe4b1074074b61f0aa4d0e3e11fe67622ab53dfb"
VENDORED = {
    HOTPOTQA_DEV_100: (100, README_SHA256),
    TWOWIKI_DEV_250: (250, "9b9a36fe0ef6762d76f231da3d4dc66f7a36bec1f12fe179cdaa2f0376b92ac6"),
    MUSIQUE_DEV_100: (100, "978ca5c16c3ed366e047a92fd31c230c3ebf668a28a90dc06ad254b886d082ad"),
}


def _write(tmp_path: Path, *lines: str) -> Path:
    path = tmp_path / "questions.jsonl"
    path.write_text("".join(f"{line}\n" for line in lines), encoding="utf-8")
    return path


def _error(tmp_path: Path, *lines: str) -> FormatError:
    with pytest.raises(FormatError) as caught:
        load(_write(tmp_path, *lines))
    return caught.value


def test_a_line_becomes_a_typed_question() -> None:
    question = parse_question(json.dumps(book_line(extra={"official_dev_index": 7})))

    assert question == Question(
        id="q1",
        question="Who wrote it?",
        answer="Ann",
        type="bridge",
        level="hard",
        supporting_facts=(("Book", 1), ("Ann", 0)),
        context=(
            Paragraph("Book", ("Book is a novel.", " It was written by Ann.")),
            Paragraph("Ann", ("Ann is a writer.",)),
        ),
        extra={"official_dev_index": 7},
    )


def test_extra_is_optional() -> None:
    assert parse_question(json.dumps(book_line())).extra == {}


def test_the_vendored_slice_is_the_first_100_questions_in_official_order() -> None:
    questions = load(HOTPOTQA_DEV_100)

    indices = [q.extra["official_dev_index"] for q in questions]
    assert len(questions) == 100
    assert indices == sorted(indices)
    assert questions[0].id == "5a8133725542995ce29dcbdb"
    assert questions[0].answer == "Robert Erskine Childers DSC"


def test_the_vendored_slice_matches_the_checksum_in_its_readme() -> None:
    digest = hashlib.sha256(HOTPOTQA_DEV_100.read_bytes()).hexdigest()

    assert digest == README_SHA256
    assert README_SHA256 in (HOTPOTQA_DEV_100.parent / "README.md").read_text(encoding="utf-8")


def test_limit_reads_only_the_first_questions() -> None:
    questions = load(HOTPOTQA_DEV_100, limit=3)

    assert [q.id for q in questions] == [q.id for q in load(HOTPOTQA_DEV_100)[:3]]


def test_every_sentence_span_slices_the_text_back_to_its_sentence() -> None:
    for question in load(HOTPOTQA_DEV_100):
        for document, paragraph in zip(documents(question), question.context, strict=True):
            assert document.text == "".join(paragraph.sentences)
            sliced = [document.text[span.start : span.end] for span in document.sentences]
            assert sliced == list(paragraph.sentences)
            assert [span.sent_id for span in document.sentences] == list(
                range(len(paragraph.sentences))
            )


def test_sentences_keep_their_leading_spaces() -> None:
    [book, _] = documents(parse_question(json.dumps(book_line())))

    assert book.text == "Book is a novel. It was written by Ann."
    start, end = book.sentences[1].start, book.sentences[1].end
    assert book.text[start:end] == " It was written by Ann."


def test_titles_are_unescaped_for_display_but_kept_as_ids() -> None:
    [question] = [q for q in load(HOTPOTQA_DEV_100) if q.id == "5a87411d5542994846c1cd37"]

    [verlag] = [d for d in documents(question) if d.doc_id.startswith("Verlag")]

    assert verlag.doc_id == "Verlag Freies Geistesleben &amp; Urachhaus"
    assert verlag.title == "Verlag Freies Geistesleben & Urachhaus"


def test_every_supporting_fact_names_a_document_and_one_of_its_sentences() -> None:
    for question in load(HOTPOTQA_DEV_100):
        spans = {d.doc_id: {s.sent_id for s in d.sentences} for d in documents(question)}
        for title, sent_id in question.supporting_facts:
            assert sent_id in spans[title]


def test_blank_lines_are_skipped_and_do_not_shift_line_numbers(tmp_path: Path) -> None:
    error = _error(tmp_path, json.dumps(book_line()), "", "{")

    assert error.line == 3


def test_invalid_json_names_its_line(tmp_path: Path) -> None:
    error = _error(tmp_path, json.dumps(book_line()), '{"id": ')

    assert error.line == 2
    assert "line 2" in str(error)
    assert "not valid JSON" in str(error)


def test_a_line_that_is_not_an_object_is_refused(tmp_path: Path) -> None:
    error = _error(tmp_path, "[1, 2]")

    assert (error.line, error.field) == (1, "")
    assert "expected a JSON object, got a list" in str(error)


def test_a_missing_field_is_named(tmp_path: Path) -> None:
    record = book_line()
    del record["answer"]

    error = _error(tmp_path, json.dumps(record))

    assert (error.line, error.field, error.problem) == (1, "answer", "missing")


def test_a_field_of_the_wrong_type_is_named(tmp_path: Path) -> None:
    error = _error(tmp_path, json.dumps(book_line(answer=42)))

    assert error.field == "answer"
    assert "expected a string, got a number" in str(error)


@pytest.mark.parametrize(
    ("facts", "field"),
    [
        ([["Book", "1"]], "supporting_facts[0][1]"),
        ([["Book", True]], "supporting_facts[0][1]"),
        ([["Book", -1]], "supporting_facts[0][1]"),
        ([["Book", 0], [3, 0]], "supporting_facts[1][0]"),
        ([["Book"]], "supporting_facts[0]"),
        ({"Book": 0}, "supporting_facts"),
    ],
)
def test_a_malformed_supporting_fact_is_named(tmp_path: Path, facts: object, field: str) -> None:
    error = _error(tmp_path, json.dumps(book_line(supporting_facts=facts)))

    assert error.field == field


@pytest.mark.parametrize(
    ("context", "field"),
    [
        ([["Book", "Book is a novel."]], "context[0][1]"),
        ([["Book", ["Book is a novel.", 3]]], "context[0][1][1]"),
        ([["Book", ["x"]], [None, ["y"]]], "context[1][0]"),
        ([["Book", ["x"], "extra"]], "context[0]"),
    ],
)
def test_a_malformed_paragraph_is_named(tmp_path: Path, context: object, field: str) -> None:
    error = _error(tmp_path, json.dumps(book_line(context=context)))

    assert error.field == field


def test_a_question_without_a_level_is_read() -> None:
    question = parse_question(json.dumps(TWOWIKI_LINE))

    assert question.level is None
    assert question.supporting_facts == (("Cold Moon", 0), ("Kora Lind", 0))


def test_a_paragraph_given_twice_word_for_word_is_kept_once() -> None:
    question = parse_question(json.dumps(TWOWIKI_LINE))

    assert [p.id for p in question.context] == ["Cold Moon", "Kora Lind"]


def test_paragraphs_that_share_a_title_are_told_apart_by_their_place() -> None:
    question = parse_question(json.dumps(MUSIQUE_LINE))

    assert [p.id for p in question.context] == ["Liberal Party #0", "Leeds", "Liberal Party #2"]
    assert [d.doc_id for d in documents(question)] == [p.id for p in question.context]
    assert {d.title for d in documents(question)} == {"Liberal Party", "Leeds"}


def test_the_supporting_paragraph_indices_say_which_paragraph_of_a_title_supports() -> None:
    question = parse_question(json.dumps(MUSIQUE_LINE))

    assert question.supporting_facts == (("Liberal Party #2", 0), ("Leeds", 0))


def test_two_supporting_paragraphs_of_one_title_both_support() -> None:
    line = {**MUSIQUE_LINE, "supporting_facts": [["Liberal Party", 0], ["Liberal Party", 0]]}
    line["extra"] = {**MUSIQUE_LINE["extra"], "supporting_paragraph_idx": [0, 2]}

    question = parse_question(json.dumps(line))

    assert question.supporting_facts == (("Liberal Party #0", 0), ("Liberal Party #2", 0))


def test_a_supporting_fact_naming_a_repeated_title_needs_the_indices(tmp_path: Path) -> None:
    line = {**MUSIQUE_LINE, "extra": {}}

    error = _error(tmp_path, json.dumps(line))

    assert error.field == "supporting_facts[0][0]"
    assert "extra.supporting_paragraph_idx must say which" in str(error)


@pytest.mark.parametrize("index", [3, -1, "1", True])
def test_a_supporting_paragraph_index_outside_the_context_is_refused(
    tmp_path: Path, index: object
) -> None:
    line = {**MUSIQUE_LINE, "extra": {"supporting_paragraph_idx": [1, index]}}

    error = _error(tmp_path, json.dumps(line))

    assert error.field == "extra.supporting_paragraph_idx[1]"


def test_answer_aliases_are_right_answers_too() -> None:
    question = parse_question(json.dumps(MUSIQUE_LINE))

    assert question.answers == ("the Liberals", "Liberal Party")
    assert parse_question(json.dumps(book_line())).answers == ("Ann",)


def test_an_alias_that_is_not_a_string_is_refused(tmp_path: Path) -> None:
    line = {**MUSIQUE_LINE, "extra": {**MUSIQUE_LINE["extra"], "answer_aliases": ["x", 3]}}

    assert _error(tmp_path, json.dumps(line)).field == "extra.answer_aliases[1]"


@pytest.mark.parametrize("path", list(VENDORED), ids=lambda p: p.parent.name)
def test_each_vendored_set_matches_its_readme_and_every_fact_names_a_sentence(path: Path) -> None:
    count, sha256 = VENDORED[path]
    questions = load(path)

    assert len(questions) == count
    assert hashlib.sha256(path.read_bytes()).hexdigest() == sha256
    assert sha256 in (path.parent / "README.md").read_text(encoding="utf-8")
    for question in questions:
        spans = {d.doc_id: {s.sent_id for s in d.sentences} for d in documents(question)}
        for doc_id, sent_id in question.supporting_facts:
            assert sent_id in spans[doc_id], (question.id, doc_id)


def test_every_musique_supporting_paragraph_is_a_gold_document() -> None:
    for question in load(MUSIQUE_DEV_100):
        supporting = {question.context[i].title for i in question.extra["supporting_paragraph_idx"]}
        gold = {doc_id for doc_id, _ in question.supporting_facts}
        assert len(gold) == len(question.extra["supporting_paragraph_idx"])
        assert {doc_id.split(" #")[0] for doc_id in gold} == supporting


def test_data_names_select_the_vendored_sets() -> None:
    assert data_path("musique") == MUSIQUE_DEV_100
    assert data_path("2WikiMultihopQA") == TWOWIKI_DEV_250
    assert data_path("hotpotqa") == HOTPOTQA_DEV_100
    assert data_path("/tmp/mine.jsonl") == Path("/tmp/mine.jsonl")
    assert [dataset_name(path) for path in DATASETS.values()] == [
        "HotpotQA",
        "2WikiMultihopQA",
        "MuSiQue",
    ]


def test_a_repeated_question_id_is_refused(tmp_path: Path) -> None:
    error = _error(tmp_path, json.dumps(book_line()), json.dumps(book_line()))

    assert (error.line, error.field) == (2, "id")
    assert "of line 1" in str(error)


def test_the_error_names_the_file(tmp_path: Path) -> None:
    path = _write(tmp_path, "nope")

    with pytest.raises(ValueError, match=r"questions\.jsonl, line 1: not valid JSON"):
        load(path)


def test_a_negative_limit_is_refused() -> None:
    with pytest.raises(ValueError, match="limit"):
        load(HOTPOTQA_DEV_100, limit=-1)


def test_reports_name_a_hex_id_by_its_beginning_and_any_other_id_whole() -> None:
    assert short_id("5a8133725542995ce29dcbdb") == "5a813372"
    assert short_id("298f23b8088a11ebbd6eac1f6bf848b6") == "298f23b8"
    assert short_id("2hop__574419_270105") == "2hop__574419_270105"
    assert short_id("2hop__574419_270106") != short_id("2hop__574419_270105")
    assert short_id("abc") == "abc"
