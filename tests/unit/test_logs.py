"""The levels every `lats` command logs at."""

from __future__ import annotations

import logging

import pytest

from app.logs import levels_for


@pytest.mark.parametrize("service", [False, True])
def test_library_records_stay_at_warning_without_v(service: bool) -> None:
    levels = levels_for(0, service=service)

    assert levels.of("httpx") == logging.WARNING
    assert levels.of("google_genai.models") == logging.WARNING


def test_a_person_s_command_holds_back_plantree_s_info_lines() -> None:
    levels = levels_for(0, service=False)

    assert levels.of("agents.nodes.planner") == logging.WARNING
    assert levels.of("calls.models") == logging.WARNING


def test_a_service_shows_its_own_info_lines_and_its_web_server_s() -> None:
    levels = levels_for(0, service=True)

    assert levels.of("app.runs.manager") == logging.INFO
    assert levels.of("uvicorn.error") == logging.INFO
    assert levels.of("applied") == logging.WARNING  # a name prefix is not a parent


def test_a_person_s_command_leaves_tool_give_ups_to_the_tree_but_shows_tool_errors() -> None:
    levels = levels_for(0, service=False)

    assert levels.of("tools.runtime") == logging.ERROR
    assert levels.of("tools.mcp") == logging.WARNING


@pytest.mark.parametrize(("verbosity", "level"), [(1, logging.INFO), (2, logging.DEBUG)])
def test_v_lowers_every_logger_to_info_and_vv_to_debug(verbosity: int, level: int) -> None:
    for service in (False, True):
        levels = levels_for(verbosity, service=service)
        assert levels.of("httpx") == levels.of("agents.engine") == levels.of("tools.runtime")
        assert levels.of("httpx") == level
        assert levels.least() == level
