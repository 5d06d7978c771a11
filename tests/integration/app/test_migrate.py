"""`lats migrate`: SQLite to Postgres and back, resumed, refused, verified, and read by the app."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import UTC, datetime
from pathlib import Path

import aiosqlite
import pytest

from agents.params import RunParams
from agents.result import RunResult
from app.cli.main import main
from app.http.sse import aframes
from app.settings import Settings
from app.store.backend import open_backend
from app.store.base import (
    Lease,
    RunRecord,
    RunStatus,
    StoredEvent,
    ThreadRecord,
    WebhookDelivery,
)
from app.store.migrate import Location, MigrationError, locations, migrate, open_side
from app.store.migrate_tables import SqliteTables
from app.store.migrate_units import Runs, Side
from app.store.protocols import RunStore
from testkit.scenario import Scenario
from tests.support.makers import EngineMaker, ServiceMaker
from tests.support.runs import run_record

TREE = Scenario(plan=["A"], replans={"A": ["B"]})
RUNS = 200
THREADS = 3  # every fourth run is asked on one of them
STATUSES: tuple[RunStatus, ...] = (
    "done",
    "failed",
    "cancelled",
    "queued",
    "running",
    "interrupted",
)
ENGINE_RUNS = ("r000", "r004", "r005", "r011")  # genuine checkpoints: two finished, two not
WORKER = "w-source"
DELIVERY = WebhookDelivery(
    webhook_id="msg", attempts=1, last_status=204, state="delivered", updated_at=datetime.now(UTC)
)


@asynccontextmanager
async def side(where: str | Path, settings: Settings, *, source: bool) -> AsyncIterator[Side]:
    at = Location(url=where) if isinstance(where, str) else Location(path=where)
    async with open_side(at, settings, source=source) as opened:
        yield opened


@asynccontextmanager
async def sides(
    source: str | Path, target: str | Path, settings: Settings
) -> AsyncIterator[tuple[Side, Side]]:
    """The two sides of a migration from `source` to `target`, open together."""
    async with (
        side(source, settings, source=True) as opened_source,
        side(target, settings, source=False) as opened_target,
    ):
        yield opened_source, opened_target


async def _run(store: RunStore, i: int, done: RunResult) -> None:
    """Run `r<i>` with `i % 5` events after its start, in status `STATUSES[i % 6]`."""
    run_id = f"r{i:03d}"
    status = STATUSES[i % len(STATUSES)]
    thread_id = f"th{i % THREADS}" if i % 4 == 0 else None
    webhook = f"https://hooks.example.com/{i}" if i % 10 == 0 else None
    record = run_record(run_id, "queued").model_copy(
        update={"tenant": f"k{i % 3}", "task": f"t{i}", "thread_id": thread_id, "webhook": webhook}
    )
    started = json.dumps({"type": "run_started", "run_id": run_id})
    await store.runs.create(record, started=started, lease=Lease(WORKER, 600))
    await store.leases.mark_running_and_check_cancel(run_id, WORKER)
    for k in range(i % 5):
        await store.events.append(run_id, WORKER, "step", json.dumps({"k": k, "x": 0.1 * k}))
    if i % 7 == 0 and status in ("queued", "running", "interrupted"):
        await store.leases.request_cancel(run_id)
    if status == "done":
        result = done.model_copy(update={"run_id": run_id})
        await store.events.finish(run_id, WORKER, "done", json.dumps({"run_id": run_id}), result)
        if webhook is not None:
            await store.deliveries.record(run_id, DELIVERY.model_copy(update={"attempts": i}))
    elif status in ("failed", "cancelled"):
        failed = RunResult.failed(run_id, "plan", "no plan", metrics={"llm_calls": i})
        await store.events.finish(
            run_id, WORKER, "error", "{}", failed.model_copy(update={"status": status})
        )
    elif status == "interrupted" and i % 12 == 5:  # waiting for its plan; every other answered
        await store.waits.pause(run_id, WORKER, "interrupt", json.dumps({"steps": ["a"]}), "plan")
        if i % 24 == 5:
            await store.waits.answer(run_id, {"action": "edit", "steps": ["b"], "by": "k0"})
    elif status in ("queued", "interrupted"):
        await store.leases.release(run_id, WORKER, status)
    # "running": left held by the source's worker, as a killed worker leaves it.


async def _build(data_dir: Path, settings: Settings, make_engine: EngineMaker) -> None:
    """A SQLite store of `RUNS` runs written through the store's API; the checkpoints of
    `ENGINE_RUNS` come from real engine runs, one of them with pending writes."""
    async with open_backend(settings.model_copy(update={"data_dir": data_dir})) as (store, saver):
        engine, _ = make_engine(TREE, checkpointer=saver)
        results = [
            await engine.run(f"t {run_id}", RunParams(max_paths=1), run_id=run_id)
            for run_id in ENGINE_RUNS
        ]
        for t in range(THREADS):
            await store.threads.create(
                ThreadRecord(id=f"th{t}", tenant="k0", created_at=datetime.now(UTC))
            )
        for i in range(RUNS):
            await _run(store, i, results[0])
        latest = await saver.aget_tuple({"configurable": {"thread_id": ENGINE_RUNS[-1]}})
        assert latest is not None
        # Pending state writes as an earlier version saved them beside each step's checkpoint
        # (today a step's checkpoint carries them: app/store/saver_guard.py).
        await saver.acopy_writes(latest.config, [("phase", "search"), ("nodes", {})], "task-1")


@pytest.fixture
async def source_dir(tmp_path: Path, settings: Settings, make_engine: EngineMaker) -> Path:
    where = tmp_path / "source"
    await _build(where, settings, make_engine)
    return where


async def _digests(opened: Side) -> dict[str, str]:
    runs = Runs()
    keys = await runs.keys(opened, "", 10_000)
    return {key: unit.digest for key in keys if (unit := await runs.read(opened, key))}


async def test_runs_go_to_postgres_and_back_with_equal_digests(
    source_dir: Path, tmp_path: Path, settings: Settings, postgres_url: str
) -> None:
    back_dir = tmp_path / "back"
    async with side(source_dir, settings, source=True) as source:
        expected = await _digests(source)
        async with side(postgres_url, settings, source=False) as pg:
            there = await migrate(source, pg, batch=64)
            running = await pg.store.runs.get("r004")
            hooked = await pg.store.runs.get("r030")
            waiting, answered = await pg.store.runs.get("r017"), await pg.store.runs.get("r005")
            on_thread = [r.id for r in await pg.store.threads.runs("th1")]
            on_postgres = await _digests(pg)
    async with sides(postgres_url, back_dir, settings) as (pg, back):
        home = await migrate(pg, back, batch=64)
        returned = await _digests(back)
        checkpoints = [t async for t in back.saver.alist({"configurable": {"thread_id": "r011"}})]

    assert there.verified, there.mismatches
    assert home.verified, home.mismatches
    assert there.copied == {"thread": THREADS, "run": RUNS} == home.copied
    assert waiting is not None
    assert (waiting.status, waiting.awaiting) == ("interrupted", "plan")
    assert answered is not None
    assert (answered.awaiting, answered.answer) == (
        None,
        {"action": "edit", "steps": ["b"], "by": "k0"},
    )
    assert on_thread == [f"r{i:03d}" for i in range(RUNS) if i % 4 == 0 and i % THREADS == 1]
    assert len(expected) == RUNS
    assert on_postgres == expected == returned
    assert there.source_rows == there.target_rows == home.target_rows
    assert there.source_rows["checkpoints"] > len(ENGINE_RUNS)  # one per round, genuine
    # The test's two; the engine's rounds leave none (their checkpoints carry them).
    assert there.source_rows["checkpoint_writes"] == 2
    assert running is not None
    assert (running.status, running.owner) == ("running", None)  # free for a target's worker
    assert hooked is not None
    assert hooked.webhook == "https://hooks.example.com/30"
    assert hooked.delivery == DELIVERY.model_copy(update={"attempts": 30})
    assert any(t.pending_writes for t in checkpoints)


async def test_an_interrupted_migration_run_again_redoes_only_what_is_missing(
    source_dir: Path, settings: Settings, postgres_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    class Stop(Exception):
        pass

    async with sides(source_dir, postgres_url, settings) as (source, pg):
        write_run = pg.tables.write_run

        async def stop_at_r011(record: RunRecord, events: list[StoredEvent]) -> None:
            if record.id == "r011":  # its checkpoints are written, its run not
                raise Stop
            await write_run(record, events)

        monkeypatch.setattr(pg.tables, "write_run", stop_at_r011)
        with pytest.raises(Stop):
            await migrate(source, pg, batch=8)
        monkeypatch.undo()
        half = [t async for t in pg.saver.alist({"configurable": {"thread_id": "r011"}})]
        stopped = await pg.tables.counts()
        # And one copied run changed since (its events gone): the ledger says it is ours.
        await pg.tables.write_run(await _record(source.store, "r000"), [])
        resumed = await migrate(source, pg, batch=8)
        expected = await _digests(source)
        copied = await _digests(pg)

    assert half
    assert stopped["runs"] == 11  # r000 … r010
    assert resumed.verified, resumed.mismatches
    assert resumed.skipped == {"thread": THREADS, "run": 10}
    assert resumed.copied == {"thread": 0, "run": RUNS - 10}  # r000 again, r011 redone, the rest
    assert copied == expected


async def _record(store: RunStore, run_id: str) -> RunRecord:
    record = await store.runs.get(run_id)
    assert record is not None
    return record


async def test_a_target_holding_other_runs_is_refused_without_merge(
    source_dir: Path, settings: Settings, postgres_url: str
) -> None:
    async with sides(source_dir, postgres_url, settings) as (source, pg):
        await pg.store.runs.create(run_record("other"), started="{}")
        with pytest.raises(MigrationError, match="already holds 1 runs the source lacks"):
            await migrate(source, pg)
        refused = await pg.tables.counts()
        merged = await migrate(source, pg, merge=True)
        after = await pg.tables.counts()

    assert refused["runs"] == 1
    assert merged.verified, merged.mismatches
    assert after["runs"] == RUNS + 1


async def test_merge_refuses_a_run_on_both_sides_with_other_content(
    source_dir: Path, settings: Settings, postgres_url: str
) -> None:
    async with sides(source_dir, postgres_url, settings) as (source, pg):
        await pg.store.runs.create(run_record("r017").model_copy(update={"task": "x"}))
        with pytest.raises(MigrationError, match="1 runs are on both sides with different"):
            await migrate(source, pg, merge=True)
        counts = await pg.tables.counts()

    assert counts["runs"] == 1  # nothing was copied


async def test_a_migrated_finished_run_reads_the_same_through_the_app(
    service_for: ServiceMaker, settings: Settings, tmp_path: Path, postgres_url: str
) -> None:
    async with service_for(TREE, data_dir=tmp_path / "app") as svc:
        async with svc.client.stream("POST", "/solve", json={"task": "t"}) as stream:
            ids = [frame.json()["run_id"] async for frame in aframes(stream.aiter_lines())]
        run_id = ids[0]
        before = (await svc.client.get(f"/runs/{run_id}")).json()
    code = await asyncio.to_thread(
        main, ["migrate", "--from", str(tmp_path / "app"), "--to", postgres_url]
    )
    async with service_for(TREE, database_url=postgres_url) as svc:
        after = (await svc.client.get(f"/runs/{run_id}")).json()

    assert code == 0
    assert before["status"] == "done"
    assert after == before


@pytest.mark.parametrize(
    ("source", "target", "code", "says"),
    [
        ("{tmp}/nothing", "{tmp}/t", 1, "holds no run store"),
        ("postgresql://postgres@127.0.0.1:9/x", "{tmp}/t", 1, "cannot open the source"),
        ("{tmp}/t", "postgresql://postgres@127.0.0.1:9/x", 1, "cannot open the target"),
        ("{tmp}/t", "{tmp}/./t", 2, "the same store"),
        ("mysql://db/x", "{tmp}/t", 2, "mysql:// is not a store"),
    ],
)
def test_wrong_stores_exit_with_a_message_not_a_traceback(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    source: str,
    target: str,
    code: int,
    says: str,
) -> None:
    (tmp_path / "t").mkdir()
    (tmp_path / "t" / "runs.sqlite").touch()
    argv = ["migrate", "--from", source.format(tmp=tmp_path), "--to", target.format(tmp=tmp_path)]
    assert main(argv) == code
    err = capsys.readouterr().err
    assert says in err
    assert "Traceback" not in err


def test_a_postgres_source_without_runs_is_refused(
    tmp_path: Path, postgres_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["migrate", "--from", postgres_url, "--to", str(tmp_path / "t")]) == 1
    assert "holds no run store" in capsys.readouterr().err
    assert locations(postgres_url, str(tmp_path))[0].identity.endswith(postgres_url[-10:])


async def test_a_copy_changed_since_is_redone_on_the_next_migration(
    source_dir: Path, settings: Settings, tmp_path: Path
) -> None:
    async with sides(source_dir, tmp_path / "t", settings) as (source, target):
        await migrate(source, target)
    async with aiosqlite.connect(tmp_path / "t" / "runs.sqlite") as conn:
        await conn.execute("UPDATE events SET data = 'changed' WHERE run_id = 'r003' AND seq = 2")
        await conn.commit()
    async with sides(source_dir, tmp_path / "t", settings) as (source, target):
        again = await migrate(source, target)

    assert again.verified, again.mismatches
    assert again.copied == {
        "thread": 0,
        "run": 1,
    }  # the target's ledger says this migration wrote it


def test_a_copy_that_differs_from_its_source_fails_verification(
    source_dir: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    write_run = SqliteTables.write_run

    async def lossy(self: SqliteTables, record: RunRecord, events: list[StoredEvent]) -> None:
        await write_run(self, record, events[:1])

    monkeypatch.setattr(SqliteTables, "write_run", lossy)
    assert main(["migrate", "--from", str(source_dir), "--to", str(tmp_path / "t")]) == 1
    err = capsys.readouterr().err
    # 17 have 1 event; the 17 waiting runs hold their `interrupt` event besides.
    assert "183 runs differ: r000, r001, r002, r003, r004 and 178 more" in err
    assert "table events: 718 rows in the source, 200 in the target" in err


async def test_a_target_lost_mid_copy_stops_with_a_message_and_a_second_run_completes(
    source_dir: Path, settings: Settings, postgres_url: str
) -> None:
    import psycopg

    name = postgres_url.rsplit("/", 1)[1]

    def lose_the_target(kind: str, copied: int) -> None:
        if copied == 20:  # what a database restart does to every connection
            with psycopg.connect(postgres_url, autocommit=True) as admin:
                admin.execute(
                    "SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
                    " WHERE datname = %s AND pid <> pg_backend_pid()",
                    (name,),
                )

    async with side(source_dir, settings, source=True) as source:
        async with side(postgres_url, settings, source=False) as pg:
            with pytest.raises(MigrationError, match=r"the migration stopped .*run it again"):
                await migrate(source, pg, progress=lose_the_target)
        async with side(postgres_url, settings, source=False) as pg:
            again = await migrate(source, pg)

    assert again.verified, again.mismatches
    assert again.skipped == {"thread": THREADS, "run": 20}
