"""Multi-hop questions in one JSON Lines format, read into typed records.

One object a line (HotpotQA's own shape; 2WikiMultihopQA and MuSiQue converted to it):

    {"id", "question", "answer", "type", "level",
     "supporting_facts": [[title, sent_id], ...],
     "context": [[title, [sentence, ...]], ...],
     "extra": {...}}                                   # optional

Text is kept exactly as in the file. `documents` turns a question's paragraphs into the
in-memory documents of its corpus (`tools.local_corpus`).
"""

from __future__ import annotations

import html
import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tools.local_docs import CorpusDocument, SentenceSpan

__all__ = [
    "HOTPOTQA_DEV_100",
    "CorpusDocument",
    "FormatError",
    "Paragraph",
    "Question",
    "SentenceSpan",
    "documents",
    "load",
    "parse_question",
]

HOTPOTQA_DEV_100 = Path(__file__).parent / "data" / "hotpotqa" / "dev_distractor_100.jsonl"
"""The vendored slice: the first 100 questions of the shared 600 (see its README)."""


class FormatError(ValueError):
    """A line that does not hold a question in the format: names the line and the field."""

    def __init__(self, source: str, line: int, field: str, problem: str) -> None:
        where = f"{source}, line {line}" if source else f"line {line}"
        super().__init__(f"{where}: {field}: {problem}" if field else f"{where}: {problem}")
        self.source = source
        self.line = line
        self.field = field
        self.problem = problem


class _FieldError(Exception):
    """Raised while reading one record; `parse_question` adds the line."""

    def __init__(self, field: str, problem: str) -> None:
        super().__init__(f"{field}: {problem}")
        self.field = field
        self.problem = problem


@dataclass(frozen=True, slots=True)
class Paragraph:
    """One paragraph of a question's context: its title and sentences, as in the file."""

    title: str
    sentences: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Question:
    """One question with its gold answer, supporting facts and context paragraphs."""

    id: str
    question: str
    answer: str
    type: str
    level: str
    supporting_facts: tuple[tuple[str, int], ...]
    """(paragraph title, sentence index) pairs, titles exactly as in `context`."""
    context: tuple[Paragraph, ...]
    extra: dict[str, Any] = field(default_factory=dict)


def load(path: Path | str, limit: int | None = None) -> list[Question]:
    """The questions in the JSON Lines file at `path`, in file order; the first `limit` only
    when given. Blank lines are skipped. Raises `FormatError` (a ValueError naming the line
    and the field) for a malformed line or a repeated question id."""
    if limit is not None and limit < 0:
        raise ValueError(f"limit must be at least 0, not {limit}")
    source = str(path)
    questions: list[Question] = []
    seen: dict[str, int] = {}
    with Path(path).open(encoding="utf-8") as lines:
        for number, line in _numbered(lines):
            if limit is not None and len(questions) >= limit:
                break
            question = parse_question(line, number, source)
            if question.id in seen:
                problem = f"repeats the id {question.id!r} of line {seen[question.id]}"
                raise FormatError(source, number, "id", problem)
            seen[question.id] = number
            questions.append(question)
    return questions


def parse_question(line: str, number: int = 1, source: str = "") -> Question:
    """One line of the format as a `Question`; `FormatError` names `number` and the field."""
    try:
        record = json.loads(line)
    except json.JSONDecodeError as e:
        raise FormatError(source, number, "", f"not valid JSON ({e.msg})") from e
    try:
        return _question(record)
    except _FieldError as e:
        raise FormatError(source, number, e.field, e.problem) from None


def documents(question: Question) -> list[CorpusDocument]:
    """Each paragraph of `question` as one document, in context order.

    `doc_id` is the title exactly as in the file (what supporting facts name), `title` the
    same with HTML entities unescaped, for display. `text` is the sentences concatenated as
    they are (each carries its own leading space), and sentence `i` is
    `text[sentences[i].start:sentences[i].end]`.
    """
    found: list[CorpusDocument] = []
    for paragraph in question.context:
        spans: list[SentenceSpan] = []
        start = 0
        for sent_id, sentence in enumerate(paragraph.sentences):
            spans.append(SentenceSpan(sent_id, start, start + len(sentence)))
            start += len(sentence)
        found.append(
            CorpusDocument(
                doc_id=paragraph.title,
                title=html.unescape(paragraph.title),
                text="".join(paragraph.sentences),
                sentences=tuple(spans),
            )
        )
    return found


def _numbered(lines: Iterable[str]) -> Iterator[tuple[int, str]]:
    for number, line in enumerate(lines, start=1):
        if line.strip():
            yield number, line


def _question(record: object) -> Question:
    if not isinstance(record, dict):
        raise _FieldError("", f"expected a JSON object, got {_kind(record)}")
    extra = record.get("extra", {})
    if not isinstance(extra, dict):
        raise _FieldError("extra", f"expected an object, got {_kind(extra)}")
    return Question(
        id=_text(record, "id"),
        question=_text(record, "question"),
        answer=_text(record, "answer"),
        type=_text(record, "type"),
        level=_text(record, "level"),
        supporting_facts=_supporting_facts(record),
        context=_context(record),
        extra=extra,
    )


def _text(record: dict[str, Any], name: str) -> str:
    if name not in record:
        raise _FieldError(name, "missing")
    value = record[name]
    if not isinstance(value, str):
        raise _FieldError(name, f"expected a string, got {_kind(value)}")
    return value


def _list(value: object, name: str) -> list[Any]:
    if not isinstance(value, list):
        raise _FieldError(name, f"expected a list, got {_kind(value)}")
    return value


def _supporting_facts(record: dict[str, Any]) -> tuple[tuple[str, int], ...]:
    if "supporting_facts" not in record:
        raise _FieldError("supporting_facts", "missing")
    facts: list[tuple[str, int]] = []
    for index, fact in enumerate(_list(record["supporting_facts"], "supporting_facts")):
        name = f"supporting_facts[{index}]"
        title, sent_id = _titled(fact, name, "[title, sent_id]")
        # bool is an int in Python, but `true` is no sentence index.
        if not isinstance(sent_id, int) or isinstance(sent_id, bool) or sent_id < 0:
            raise _FieldError(f"{name}[1]", f"expected a sentence index >= 0, got {sent_id!r}")
        facts.append((title, sent_id))
    return tuple(facts)


def _context(record: dict[str, Any]) -> tuple[Paragraph, ...]:
    if "context" not in record:
        raise _FieldError("context", "missing")
    paragraphs: list[Paragraph] = []
    titles: dict[str, int] = {}
    for index, item in enumerate(_list(record["context"], "context")):
        name = f"context[{index}]"
        title, sentences = _titled(item, name, "[title, [sentence, ...]]")
        if title in titles:
            # Supporting facts name paragraphs by title: a repeated one would be ambiguous.
            problem = f"repeats the title {title!r} of context[{titles[title]}]"
            raise _FieldError(f"{name}[0]", problem)
        titles[title] = index
        for position, sentence in enumerate(_list(sentences, f"{name}[1]")):
            if not isinstance(sentence, str):
                problem = f"expected a string, got {_kind(sentence)}"
                raise _FieldError(f"{name}[1][{position}]", problem)
        paragraphs.append(Paragraph(title=title, sentences=tuple(sentences)))
    return tuple(paragraphs)


def _titled(value: object, name: str, shape: str) -> tuple[str, Any]:
    """A `[title, something]` pair of the file, its title checked to be a string."""
    pair = _list(value, name)
    if len(pair) != 2:
        raise _FieldError(name, f"expected {shape}, got {len(pair)} items")
    title, rest = pair
    if not isinstance(title, str):
        raise _FieldError(f"{name}[0]", f"expected a title string, got {_kind(title)}")
    return title, rest


def _kind(value: object) -> str:
    """The JSON type of a decoded value, for messages."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    return "a list" if isinstance(value, list) else "an object"
