"""Multi-hop questions in one JSON Lines format, read into typed records.

One object a line (HotpotQA's own shape; 2WikiMultihopQA and MuSiQue converted to it):

    {"id", "question", "answer", "type", "level",
     "supporting_facts": [[title, sent_id], ...],
     "context": [[title, [sentence, ...]], ...],
     "extra": {...}}                                   # optional

Text is kept exactly as in the file. The three sets differ in what a reader must accept:
`level` may be null (2WikiMultihopQA, MuSiQue); a title may repeat inside one context
(MuSiQue: different paragraphs, told apart by `extra.supporting_paragraph_idx`;
2WikiMultihopQA: the same paragraph twice, kept once); MuSiQue's `extra.answer_aliases` are
right answers too. `documents` turns a question's paragraphs into the in-memory documents of
its corpus (`tools.local_corpus`).
"""

from __future__ import annotations

import html
import json
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tools.corpus_index import CorpusDocument, SentenceSpan

__all__ = [
    "DATASETS",
    "HOTPOTQA_DEV_100",
    "MUSIQUE_DEV_100",
    "TWOWIKI_DEV_250",
    "CorpusDocument",
    "FormatError",
    "Paragraph",
    "Question",
    "SentenceSpan",
    "data_path",
    "dataset_name",
    "documents",
    "load",
    "parse_question",
]

_DATA = Path(__file__).parent / "data"
HOTPOTQA_DEV_100 = _DATA / "hotpotqa" / "dev_distractor_100.jsonl"
"""The vendored slice: the first 100 questions of the shared 600 (see its README)."""
TWOWIKI_DEV_250 = _DATA / "2wikimultihopqa" / "dev_250.jsonl"
"""250 2WikiMultihopQA dev questions (see its README)."""
MUSIQUE_DEV_100 = _DATA / "musique" / "dev_100.jsonl"
"""100 MuSiQue-Ans dev questions (see its README)."""
DATASETS: dict[str, Path] = {
    "hotpotqa": HOTPOTQA_DEV_100,
    "2wikimultihopqa": TWOWIKI_DEV_250,
    "musique": MUSIQUE_DEV_100,
}
"""The vendored sets by the name `--data` accepts for them."""
_LABELS = {"hotpotqa": "HotpotQA", "2wikimultihopqa": "2WikiMultihopQA", "musique": "MuSiQue"}


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
    id: str = ""
    """What supporting facts and the corpus name it by: its title, or where another paragraph
    of the context has the same title, the title and its position (`Title #3`). Empty given,
    the title."""

    def __post_init__(self) -> None:
        if not self.id:
            object.__setattr__(self, "id", self.title)


@dataclass(frozen=True, slots=True)
class Question:
    """One question with its gold answer, supporting facts and context paragraphs."""

    id: str
    question: str
    answer: str
    type: str
    level: str | None
    supporting_facts: tuple[tuple[str, int], ...]
    """(paragraph id, sentence index) pairs: `Paragraph.id`, which is the title exactly as in
    `context` unless the title repeats."""
    context: tuple[Paragraph, ...]
    extra: dict[str, Any] = field(default_factory=dict)
    aliases: tuple[str, ...] = ()
    """Other answers that count as right (MuSiQue's `extra.answer_aliases`)."""

    @property
    def answers(self) -> tuple[str, ...]:
        """Every right answer: the gold one first, then its aliases."""
        return (self.answer, *self.aliases)


SHORT_ID = 8


def short_id(question_id: str) -> str:
    """How the reports name a question: the first `SHORT_ID` characters of a hex id
    (HotpotQA's, 2WikiMultihopQA's: unique, and `--ids` takes beginnings), the whole id
    otherwise (MuSiQue's `2hop__…` share their beginnings)."""
    hexadecimal = all(c in "0123456789abcdef" for c in question_id.lower())
    return question_id[:SHORT_ID] if hexadecimal else question_id


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


def data_path(name_or_path: str) -> Path:
    """The vendored set called `name_or_path` (a key of `DATASETS`), or else that file."""
    return DATASETS.get(name_or_path.casefold(), Path(name_or_path))


def dataset_name(path: Path | str) -> str:
    """Which data set a file holds: a vendored file's, or the one its file name starts with
    (as the shared files' do); HotpotQA when the name says none."""
    resolved = Path(path).resolve()
    for key, vendored in DATASETS.items():
        if resolved == vendored.resolve():
            return _LABELS[key]
    name = Path(path).name.casefold()
    return next((label for key, label in _LABELS.items() if name.startswith(key)), "HotpotQA")


def documents(question: Question) -> list[CorpusDocument]:
    """Each paragraph of `question` as one document, in context order.

    `doc_id` is the paragraph's id (what supporting facts name: the title exactly as in the
    file where it does not repeat), `title` the title with HTML entities unescaped, for
    display. `text` is the sentences concatenated as they are (each carries its own leading
    space), and sentence `i` is `text[sentences[i].start:sentences[i].end]`.
    """
    return [paragraph_document(paragraph, paragraph.id) for paragraph in question.context]


def paragraph_document(paragraph: Paragraph, doc_id: str) -> CorpusDocument:
    """`paragraph` as one corpus document named `doc_id`, its sentences as spans."""
    spans: list[SentenceSpan] = []
    start = 0
    for sent_id, sentence in enumerate(paragraph.sentences):
        spans.append(SentenceSpan(sent_id, start, start + len(sentence)))
        start += len(sentence)
    return CorpusDocument(
        doc_id=doc_id,
        title=html.unescape(paragraph.title),
        text="".join(paragraph.sentences),
        sentences=tuple(spans),
    )


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
    kept, at = _context(record)
    return Question(
        id=_text(record, "id"),
        question=_text(record, "question"),
        answer=_text(record, "answer"),
        type=_text(record, "type"),
        level=_optional_text(record, "level"),
        supporting_facts=_resolved(_supporting_facts(record), kept, at, extra),
        context=kept,
        extra=extra,
        aliases=_aliases(extra),
    )


def _text(record: dict[str, Any], name: str) -> str:
    if name not in record:
        raise _FieldError(name, "missing")
    value = record[name]
    if not isinstance(value, str):
        raise _FieldError(name, f"expected a string, got {_kind(value)}")
    return value


def _optional_text(record: dict[str, Any], name: str) -> str | None:
    """A string field that may be null (2WikiMultihopQA and MuSiQue have no levels)."""
    if name in record and record[name] is None:
        return None
    return _text(record, name)


def _aliases(extra: dict[str, Any]) -> tuple[str, ...]:
    aliases = _list(extra.get("answer_aliases", []), "extra.answer_aliases")
    for index, alias in enumerate(aliases):
        if not isinstance(alias, str):
            problem = f"expected a string, got {_kind(alias)}"
            raise _FieldError(f"extra.answer_aliases[{index}]", problem)
    return tuple(aliases)


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


def _context(record: dict[str, Any]) -> tuple[tuple[Paragraph, ...], list[int]]:
    """The context's paragraphs, each once, with ids; and for each position in the file's
    context, the position of its paragraph among those kept."""
    if "context" not in record:
        raise _FieldError("context", "missing")
    read: list[tuple[str, tuple[str, ...]]] = []
    for index, item in enumerate(_list(record["context"], "context")):
        name = f"context[{index}]"
        title, sentences = _titled(item, name, "[title, [sentence, ...]]")
        for position, sentence in enumerate(_list(sentences, f"{name}[1]")):
            if not isinstance(sentence, str):
                problem = f"expected a string, got {_kind(sentence)}"
                raise _FieldError(f"{name}[1][{position}]", problem)
        read.append((title, tuple(sentences)))
    # A paragraph given twice word for word (2WikiMultihopQA does so) is one paragraph: a
    # second copy would only take a place among the passages a search shows.
    first: dict[tuple[str, tuple[str, ...]], int] = {}
    for index, paragraph in enumerate(read):
        first.setdefault(paragraph, index)
    kept_at = {paragraph: position for position, paragraph in enumerate(first)}
    titles = Counter(title for title, _ in first)
    # Different paragraphs under one title (MuSiQue) stay apart by their place in the file.
    kept = tuple(
        Paragraph(title, sentences, title if titles[title] == 1 else f"{title} #{index}")
        for (title, sentences), index in first.items()
    )
    return kept, [kept_at[paragraph] for paragraph in read]


def _resolved(
    facts: tuple[tuple[str, int], ...],
    kept: tuple[Paragraph, ...],
    at: list[int],
    extra: dict[str, Any],
) -> tuple[tuple[str, int], ...]:
    """The supporting facts with paragraph ids for titles. A title that names one paragraph
    names it; where `extra.supporting_paragraph_idx` is given, a fact names the supporting
    paragraphs of its title (MuSiQue's titles repeat, and the indices are authoritative); a
    title no paragraph has is kept as it is (it scores as a miss, as officially)."""
    by_title: dict[str, list[Paragraph]] = {}
    for paragraph in kept:
        by_title.setdefault(paragraph.title, []).append(paragraph)
    supporting = _supporting_paragraphs(extra, kept, at)
    resolved: list[tuple[str, int]] = []
    for index, (title, sent_id) in enumerate(facts):
        named = by_title.get(title, [])
        if supporting is not None and named:
            named = [p for p in named if p.id in supporting]
            if not named:
                problem = f"names {title!r}, which no supporting paragraph has as its title"
                raise _FieldError(f"supporting_facts[{index}][0]", problem)
        elif len(named) > 1:
            problem = (
                f"names {title!r}, a title of {len(named)} paragraphs: "
                "extra.supporting_paragraph_idx must say which"
            )
            raise _FieldError(f"supporting_facts[{index}][0]", problem)
        for fact in [(p.id, sent_id) for p in named] or [(title, sent_id)]:
            if fact not in resolved:
                resolved.append(fact)
    return tuple(resolved)


def _supporting_paragraphs(
    extra: dict[str, Any], kept: tuple[Paragraph, ...], at: list[int]
) -> set[str] | None:
    """The ids of the paragraphs `extra.supporting_paragraph_idx` names; None without it."""
    if "supporting_paragraph_idx" not in extra:
        return None
    name = "extra.supporting_paragraph_idx"
    ids: set[str] = set()
    for position, index in enumerate(_list(extra["supporting_paragraph_idx"], name)):
        valid = isinstance(index, int) and not isinstance(index, bool)
        if not valid or not 0 <= index < len(at):
            problem = f"expected an index into context (0 to {len(at) - 1}), got {index!r}"
            raise _FieldError(f"{name}[{position}]", problem)
        ids.add(kept[at[index]].id)
    return ids


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
