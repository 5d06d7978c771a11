"""`lats thread`, `lats solve --thread` and `lats approve` against a running server: a
follow-up asked on a thread is stored on it; a run stopped at its plan is approved as edited
from a file, or rejected."""

from __future__ import annotations

import argparse
import io
from pathlib import Path

import pytest

from agents.params import RunParams
from app.cli.errors import CliError
from app.cli.main import main
from app.cli.remote import approve_async, solve_remote, thread_async
from app.cli.render import TreePrinter
from app.http.sse import frames
from testkit.scenario import Scenario
from tests.support.makers import ServiceMaker

TREE = Scenario(plan=["A"], replans={"A": ["B"]})


def _approve(
    url: str, run_id: str, edit: str | None = None, reject: bool = False
) -> argparse.Namespace:
    return argparse.Namespace(url=url, run_id=run_id, edit=edit, reject=reject, api_key=None)


async def test_solve_on_a_thread_stores_the_run_on_it(
    service_for: ServiceMaker, capsys: pytest.CaptureFixture[str]
) -> None:
    async with service_for(TREE) as svc:
        await thread_async(argparse.Namespace(url=svc.url, api_key=None))
        thread_id = capsys.readouterr().out.strip()
        code = await solve_remote(
            svc.url,
            "t",
            RunParams(max_paths=1),
            TreePrinter(io.StringIO()),
            {},
            thread_id=thread_id,
        )
        thread = (await svc.client.get(f"/threads/{thread_id}")).json()

    assert code == 0
    assert [r["status"] for r in thread["runs"]] == ["done"]


async def test_approve_with_an_edited_plan_from_a_file_then_the_run_follows_it(
    service_for: ServiceMaker, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    plan = tmp_path / "plan.txt"
    plan.write_text("C\n\n  D  \n")
    out = io.StringIO()
    async with service_for(TREE) as svc:
        params = RunParams(max_paths=1, approve_plan=True)
        stopped = await solve_remote(svc.url, "t", params, TreePrinter(out), {})
        run_id = out.getvalue().split()[1]  # "run <id>"
        code = await approve_async(_approve(svc.url, run_id, edit=str(plan)))
        done = (await svc.client.get(f"/runs/{run_id}/events")).text
        run = (await svc.client.get(f"/runs/{run_id}")).json()
        with pytest.raises(CliError) as again:  # the run no longer waits: the server's 409
            await approve_async(_approve(svc.url, run_id, reject=True))

    assert stopped == 0
    assert f"the plan waits for approval: lats approve {run_id}" in out.getvalue()
    assert code == 0
    assert f"run {run_id} · plan edited · queued" in capsys.readouterr().out
    assert [f.event for f in frames(done.splitlines())][-1] == "done"
    assert [n["step"] for n in run["nodes"]] == ["C"]  # D is still planned after C
    assert again.value.code == 1
    assert "409" in str(again.value)


def test_approve_refuses_an_empty_plan_file_and_a_run_not_waiting(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    empty = tmp_path / "empty.txt"
    empty.write_text("\n \n")

    code = main(["approve", "r1", "--url", "http://127.0.0.1:9", "--edit", str(empty)])

    assert code == 2
    assert "holds no step" in capsys.readouterr().err
    assert main(["solve", "t", "--thread", "x"]) == 2
    assert "need a server" in capsys.readouterr().err
