"""An HTML page as plain text with its headings: what a reader sees, not the markup.

Scripts, styles, templates and other invisible parts are dropped; block elements end a
paragraph; `h1` to `h6` become Markdown headings, so the passage splitter cuts on them as it does
in Markdown. Bounded: a page of more than `max_elements` start tags, or nested deeper than
`max_depth`, is refused (`HtmlTooComplex`) rather than walked (a crafted page can hold millions
of empty tags), and the text stops growing at `max_chars`.
"""

from __future__ import annotations

import re
from html.parser import HTMLParser

_SKIP = frozenset({"script", "style", "template", "noscript", "svg", "head", "iframe", "object"})
_BLOCK = frozenset(
    {
        "p", "div", "section", "article", "main", "aside", "header", "footer", "nav",
        "li", "ul", "ol", "dl", "dt", "dd", "table", "tr", "blockquote", "pre", "br",
        "hr", "figure", "figcaption", "form", "address",
    }
)  # fmt: skip
_HEADINGS = {f"h{n}": n for n in range(1, 7)}
_VOID = frozenset(
    {"br", "hr", "img", "input", "meta", "link", "area", "base", "col", "embed", "source", "wbr"}
)
_SPACES = re.compile(r"[ \t\r\f\v]+")
_BLANK_LINES = re.compile(r"\n{3,}")


class HtmlTooComplex(ValueError):
    """The page has more elements, or deeper nesting, than the limits allow."""


class _Text(HTMLParser):
    def __init__(self, max_chars: int, max_elements: int, max_depth: int) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self.size = 0
        self.max_chars = max_chars
        self.max_elements = max_elements
        self.max_depth = max_depth
        self.elements = 0
        self.depth = 0
        self.skipping = 0
        self.heading: int | None = None
        self.title: list[str] = []
        self.in_title = False

    def _add(self, text: str) -> None:
        if self.size >= self.max_chars:
            return
        text = text[: self.max_chars - self.size]
        self.parts.append(text)
        self.size += len(text)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.elements += 1
        if self.elements > self.max_elements:
            raise HtmlTooComplex(f"more than {self.max_elements} elements")
        if tag not in _VOID:
            self.depth += 1
            if self.depth > self.max_depth:
                raise HtmlTooComplex(f"nested deeper than {self.max_depth}")
        if tag == "title":
            self.in_title = True
        if tag in _SKIP:
            self.skipping += 1
        elif tag in _HEADINGS:
            self.heading = _HEADINGS[tag]
            self._add("\n\n" + "#" * self.heading + " ")
        elif tag in _BLOCK:
            self._add("\n\n" if tag != "br" else "\n")

    def handle_endtag(self, tag: str) -> None:
        if tag not in _VOID:
            self.depth = max(0, self.depth - 1)
        if tag == "title":
            self.in_title = False
        if tag in _SKIP:
            self.skipping = max(0, self.skipping - 1)
        elif tag in _HEADINGS:
            self.heading = None
            self._add("\n\n")
        elif tag in _BLOCK:
            self._add("\n\n")

    def handle_data(self, data: str) -> None:
        if self.in_title:
            self.title.append(data)
            return
        if self.skipping:
            return
        text = _SPACES.sub(" ", data)
        if self.heading is not None:
            text = text.replace("\n", " ")
        self._add(text)


def html_text(
    html: str, *, max_chars: int = 5_000_000, max_elements: int = 200_000, max_depth: int = 512
) -> tuple[str, str]:
    """(title, text) of an HTML page: the `<title>` (empty when none) and the visible text,
    paragraphs apart by a blank line, headings as Markdown headings."""
    parser = _Text(max_chars, max_elements, max_depth)
    parser.feed(html)
    parser.close()
    lines = [line.strip() for line in "".join(parser.parts).split("\n")]
    text = _BLANK_LINES.sub("\n\n", "\n".join(lines)).strip()
    return _SPACES.sub(" ", " ".join(parser.title)).strip(), text
