"""Formatting of tool results: bounded text, sources matching what is shown, failure texts."""

from __future__ import annotations

import pytest

from tools.results import (
    EMPTY_KINDS,
    FAILURE_KINDS,
    Hit,
    failure,
    no_results,
    options_offered,
    read_artifact,
    render_hits,
    shorten,
)


def _hits(count: int, body_chars: int) -> list[Hit]:
    return [
        Hit(
            title=f"Result {i}",
            url=f"https://example.org/{i}",
            text=("word " * body_chars)[:body_chars],
            meta=f"meta {i}",
        )
        for i in range(count)
    ]


def test_shorten_cuts_at_a_word_boundary_and_marks_the_cut() -> None:
    text = "alpha beta gamma delta epsilon"

    assert shorten(text, 100) == text
    assert shorten(text, 18) == "alpha beta gamma…"
    assert len(shorten(text, 18)) <= 18


def test_shorten_collapses_whitespace() -> None:
    assert shorten("a\n\n  b\tc", 50) == "a b c"


@pytest.mark.parametrize("max_chars", [200, 500, 1500, 3000])
def test_rendered_content_never_exceeds_the_budget(max_chars: int) -> None:
    content, _ = render_hits("web_search", "query", _hits(8, 2000), max_chars)

    assert len(content) <= max_chars


def test_sources_are_exactly_the_hits_shown() -> None:
    content, artifact = render_hits("web_search", "query", _hits(8, 2000), 700)

    shown = [s["url"] for s in artifact["sources"]]
    assert 0 < len(shown) < 8
    for url in shown:
        assert url in content
    for i in range(len(shown), 8):
        assert f"https://example.org/{i}" not in content


def test_all_hits_and_sources_kept_when_they_fit() -> None:
    content, artifact = render_hits("arxiv", "q", _hits(3, 100), 3000)

    assert {k: v for k, v in artifact.items() if k != "passages"} == {
        "ok": True,
        "error_kind": None,
        "sources": [{"title": f"Result {i}", "url": f"https://example.org/{i}"} for i in range(3)],
    }
    assert [p["url"] for p in artifact["passages"]] == [
        f"https://example.org/{i}" for i in range(3)
    ]
    assert content.startswith('arxiv results for "q":')


def test_every_passage_shown_is_in_the_content_verbatim() -> None:
    content, artifact = render_hits("web_search", "query", _hits(8, 2000), 700)

    passages = artifact["passages"]
    assert passages
    assert all(p["text"] and p["text"] in content for p in passages)
    assert [p["url"] for p in passages] == [s["url"] for s in artifact["sources"]]
    assert "[3] Result 2" in content
    assert "meta 1" in content


def test_short_bodies_stay_whole_while_long_ones_are_cut() -> None:
    short = Hit(title="Short", url="https://a.example/", text="tiny body text")
    long = Hit(title="Long", url="https://b.example/", text="x " * 5000)

    content, _ = render_hits("web_search", "q", [short, long], 1000)

    assert "tiny body text" in content
    assert "…" in content
    assert len(content) <= 1000


def test_duplicate_urls_give_one_source() -> None:
    hits = [
        Hit(title="Part 1", url="local://guide.md", text="one"),
        Hit(title="Part 2", url="local://guide.md", text="two"),
    ]

    _, artifact = render_hits("local_docs", "q", hits, 2000)

    assert artifact["sources"] == [{"title": "Part 1", "url": "local://guide.md"}]


def test_no_hits_is_an_empty_success() -> None:
    content, artifact = render_hits("wikipedia", "zzqx", [], 1000)

    assert artifact == {"ok": True, "error_kind": "no_results", "sources": []}
    assert content.startswith("wikipedia: no results")
    assert (content, artifact) == no_results("wikipedia", "zzqx")


def test_footer_is_shown_after_the_hits() -> None:
    content, _ = render_hits("wikipedia", "q", _hits(1, 50), 1000, footer="Other: A; B")

    assert content.endswith("Other: A; B")


def test_failure_names_the_tool_and_the_kind() -> None:
    content, artifact = failure("web_search", "rate_limited")

    assert content == "web_search: rate limited, try a different query or tool"
    assert artifact == {"ok": False, "error_kind": "rate_limited", "sources": []}


def test_http_failure_shows_the_status_but_network_failure_hides_details() -> None:
    http_content, _ = failure("arxiv", "http_error", "HTTP 503")
    network_content, _ = failure("arxiv", "network", "ConnectionError: secret-host:443")

    assert "HTTP 503" in http_content
    assert "secret-host" not in network_content
    assert network_content.startswith("arxiv: ")


def test_every_failure_kind_has_a_message() -> None:
    for kind in FAILURE_KINDS:
        content, artifact = failure("wikipedia", kind)  # type: ignore[arg-type]
        assert content.startswith("wikipedia: ")
        assert artifact["ok"] is False
    assert not FAILURE_KINDS & EMPTY_KINDS


def test_options_offered_lists_options_within_budget() -> None:
    options = [f"Mercury ({i})" for i in range(100)]

    content, artifact = options_offered("wikipedia", "Mercury", options, 300)

    assert artifact == {"ok": True, "error_kind": "disambiguation", "sources": []}
    assert "- Mercury (0)" in content
    assert "- Mercury (99)" not in content
    assert len(content) <= 300


def test_read_artifact_treats_a_missing_artifact_as_invalid_input() -> None:
    assert read_artifact(None) == {"ok": False, "error_kind": "invalid_input", "sources": []}


def test_read_artifact_keeps_valid_fields_and_drops_broken_ones() -> None:
    raw = {
        "ok": True,
        "error_kind": "made_up",
        "sources": [{"title": "T", "url": "https://t.example/"}, {"title": 3}, "x"],
    }

    assert read_artifact(raw) == {
        "ok": True,
        "error_kind": None,
        "sources": [{"title": "T", "url": "https://t.example/"}],
    }


def test_read_artifact_gives_a_failure_without_kind_the_internal_kind() -> None:
    assert read_artifact({"ok": False})["error_kind"] == "internal"
