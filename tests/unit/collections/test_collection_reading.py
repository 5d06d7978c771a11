"""What the reading process answers for a file (app/collections/read_worker.py), and the name
pasted text is kept under (app/collections/service.py): pure functions, no process started."""

from __future__ import annotations

import json

import pytest
from pypdf.errors import LimitReachedError

from app.collections import read_worker
from app.collections.read_worker import read_result, request_header
from app.collections.service import text_name
from testkit.pdfs import text_pdf
from tools.documents.reading import ReadLimits


def test_a_file_read_is_answered_with_its_passages_by_page() -> None:
    pdf = text_pdf([["First page."], ["Second page."]], title="Two pages")

    answer = read_result("two.pdf", pdf, ReadLimits())

    assert answer["ok"] is True
    assert (answer["title"], answer["kind"], answer["pages"]) == ("Two pages", "pdf", 2)
    assert answer["passages"] == [[1, 1, None, "First page."], [2, 1, None, "Second page."]]
    assert json.loads(json.dumps(answer)) == answer


def test_a_refused_file_is_answered_with_the_readers_code() -> None:
    assert read_result("empty.md", b"  \n", ReadLimits()) == {
        "ok": False,
        "code": "empty",
        "message": "the file is empty",
    }


@pytest.mark.parametrize(
    ("raised", "code"),
    [
        (MemoryError(), "too_complex"),
        (RecursionError(), "too_complex"),
        (LimitReachedError("too many operators"), "too_complex"),
        (AssertionError("a reader library's own check"), "corrupt"),
        (ZeroDivisionError(), "corrupt"),
    ],
)
def test_a_reader_failure_on_the_files_content_is_a_refusal(
    raised: BaseException, code: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    def failing(name: str, data: bytes, limits: ReadLimits) -> None:
        raise raised

    monkeypatch.setattr(read_worker, "read_document", failing)

    answer = read_result("x.pdf", b"%PDF-1.4", ReadLimits())

    assert (answer["ok"], answer["code"]) == (False, code)
    assert answer["message"]


def test_the_request_header_is_one_json_line_with_the_limits() -> None:
    header = request_header("a.md", ReadLimits(max_pages=7), 12)

    assert header.endswith(b"\n")
    assert header.count(b"\n") == 1
    decoded = json.loads(header)
    assert (decoded["name"], decoded["size"], decoded["limits"]["max_pages"]) == ("a.md", 12, 7)


@pytest.mark.parametrize(
    ("title", "name"),
    [
        ("Field notes", "Field notes.md"),
        ("A/B testing \\ results", "A-B testing - results.md"),
        ("bell\x07 and tab\t", "bell- and tab.md"),
        ("...", "text.md"),
        ("x" * 300, "x" * 200 + ".md"),
    ],
)
def test_pasted_text_is_kept_under_a_file_name_made_of_its_title(title: str, name: str) -> None:
    assert text_name(title) == name
