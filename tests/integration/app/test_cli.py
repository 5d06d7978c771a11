"""The `lats` command against a running server, and its answers to bad input."""

from __future__ import annotations

import argparse
import io

import pytest

from agents.params import RunParams
from app.cli.main import main
from app.cli.remote import runs_async, show_async, solve_remote
from app.cli.render import TreePrinter
from app.http.schemas import MAX_TASK_CHARS
from testkit.scenario import Scenario
from tests.support.makers import ServiceMaker

TREE = Scenario(plan=["A"], replans={"A": ["B"]})


async def test_solve_against_a_server_renders_the_tree_and_answer(
    service_for: ServiceMaker, capsys: pytest.CaptureFixture[str]
) -> None:
    out = io.StringIO()
    async with service_for(TREE) as svc:
        code = await solve_remote(svc.url, "t", RunParams(max_paths=1), TreePrinter(out), {})
        listed = await runs_async(
            argparse.Namespace(url=svc.url, limit=5, status=None, api_key=None)
        )
        run_id = capsys.readouterr().out.split()[0]
        shown = await show_async(argparse.Namespace(url=svc.url, run_id=run_id, api_key=None))

    text = out.getvalue()
    assert code == 0 == listed == shown
    assert "  ▶ n1 A" in text
    assert "answer:\nanswer via B" in text
    show_text = capsys.readouterr().out
    assert "  ★ n1 [done] A" in show_text
    assert "    ★ n1.1 [done] B" in show_text


def test_bad_options_exit_2_with_a_message(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["solve", "x", "--max-paths", "0"]) == 2
    assert "--max-paths" in capsys.readouterr().err
    assert main(["solve", "   "]) == 2


def test_a_task_over_the_api_limit_is_refused_with_the_limit(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["solve", "x" * (MAX_TASK_CHARS + 1)]) == 2
    assert f"1 to {MAX_TASK_CHARS} characters" in capsys.readouterr().err


def test_an_unreachable_server_exits_1_without_a_traceback(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["runs", "--url", "http://127.0.0.1:9"]) == 1
    err = capsys.readouterr().err
    assert "cannot reach the server" in err
    assert "Traceback" not in err
