"""The reading process starts light: a text file is read without importing the PDF library
(most of the worker's start-up before), which a PDF still is read with."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from testkit.pdfs import text_pdf

ROOT = Path(__file__).resolve().parents[3]


def _imports_pypdf(name: str, data: bytes) -> tuple[bool, dict[str, object]]:
    script = (
        "import json, sys\n"
        "from app.collections.read_worker import read_result\n"
        "from tools.documents.reading import ReadLimits\n"
        "answer = read_result(sys.argv[1], sys.stdin.buffer.read(), ReadLimits())\n"
        "print(json.dumps(['pypdf' in sys.modules, answer]))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script, name],
        input=data,
        capture_output=True,
        cwd=ROOT,
        check=True,
        timeout=60,
    )
    loaded, answer = json.loads(done.stdout)
    return bool(loaded), answer


def test_a_text_file_is_read_without_the_pdf_library() -> None:
    loaded, answer = _imports_pypdf("notes.md", b"# Notes\n\nThe bridge opened in 1932.\n")
    assert answer["ok"] is True
    assert loaded is False


@pytest.mark.parametrize("name", ["empty.pdf", "named.txt"])
def test_a_pdf_is_read_with_it_whatever_its_name(name: str) -> None:
    loaded, answer = _imports_pypdf(name, text_pdf([["The bridge opened in 1932."]]))
    assert loaded is True
    assert answer["ok"] is True
    assert answer["kind"] == "pdf"
