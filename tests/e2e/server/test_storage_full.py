"""A full disk under the embedded SQLite store, with the server as a real process: its data
directory on a small tmpfs of the test's own that fills while a run is in flight. The run ends
with a clear `error` (`storage_full`), new runs are refused with 507, an earlier run is whole;
once space returns runs are taken again, and after a restart the store opens cleanly. With no
reserve the run's end finds no room either: the run stops on the server without it and is
taken up again, and finished, once there is room."""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from app.store.disk import RESERVE_NAME
from testkit.events import read_events
from testkit.gemini_roles import research_scenario
from testkit.gemini_sim import GeminiSimulator, SimRequest
from testkit.gemini_sim import Reply as SimReply
from testkit.process import ServerProcess
from testkit.small_disk import fill, mount_tmpfs, unmount
from testkit.storm import BODY, check_history
from testkit.waiting import wait_for

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(300)]

DISK = "24m"
RESERVE_BYTES = 1024 * 1024
HELD_STEP = "Step to execute: Summarise them"
SECOND = "What do the other sources say?"


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A 24 MiB tmpfs mounted for the test (needs root, as in CI; skipped elsewhere)."""
    mount = tmp_path / "disk"
    why = mount_tmpfs(mount, DISK)
    if why is not None:
        if os.environ.get("CI"):
            pytest.fail(f"cannot mount a tmpfs: {why}")
        pytest.skip(f"cannot mount a tmpfs: {why}")
    try:
        yield mount
    finally:
        unmount(mount)


def give_back(filler: Path, size: int) -> None:
    """Free `size` bytes of `filler`."""
    os.truncate(filler, max(0, filler.stat().st_size - size))


class HeldOnce:
    """The research scenario; the held step of the run asking `SECOND` waits until `release`."""

    def __init__(self) -> None:
        self.release = threading.Event()
        self.held = threading.Event()
        self._inner = research_scenario()

    def __call__(self, request: SimRequest) -> SimReply:
        prompt = request.prompt
        if HELD_STEP in prompt and SECOND in prompt and not request.function_responses:
            self.held.set()
            self.release.wait(120)
        return self._inner(request)


def test_a_run_in_flight_ends_storage_full_and_the_store_survives(
    env: dict[str, str], procs: list[ServerProcess], small_disk: Path
) -> None:
    script = HeldOnce()
    data = small_disk / "data"
    with GeminiSimulator(script) as sim:
        settings = {
            **env,
            "GOOGLE_GEMINI_BASE_URL": sim.base_url,
            "LATS_DATA_DIR": str(data),
            "LATS_STORAGE_RESERVE_BYTES": str(RESERVE_BYTES),
        }
        service = ServerProcess(settings)
        procs.append(service)
        service.start(timeout_s=180)
        with httpx.Client(base_url=service.url, timeout=60) as client:
            earlier = client.post("/solve", json=BODY, headers={"Accept": "application/json"})
            assert earlier.status_code == 200, earlier.text
            earlier_id = earlier.json()["run_id"]
            earlier_trace = client.get(f"/runs/{earlier_id}/trace").text

            started = client.post("/runs", json={**BODY, "task": SECOND})
            assert started.status_code == 202, started.text
            run_id = started.json()["run_id"]
            assert script.held.wait(60)
            filler = fill(small_disk)
            if not (data / RESERVE_NAME).exists():
                # A write of the server's (a lease renewal) found the disk full while it was
                # being filled, and the filler took the space its reserve gave back: half of
                # it back is room for the run's end, short of the room that ends the full state.
                give_back(filler, RESERVE_BYTES // 2)
            script.release.set()
            events = read_events(service.url, run_id, within_s=120)
            ended = client.get(f"/runs/{run_id}").json()
            refused = client.post("/runs", json=BODY)

            filler.unlink()
            again = client.post("/solve", json=BODY, headers={"Accept": "application/json"})
        assert service.terminate() in (0, -15)  # uvicorn re-raises SIGTERM after its shutdown

        restarted = ServerProcess(settings)
        procs.append(restarted)
        restarted.start(timeout_s=180)
        with httpx.Client(base_url=restarted.url, timeout=60) as client:
            earlier_after = client.get(f"/runs/{earlier_id}").json()
            trace_after = client.get(f"/runs/{earlier_id}/trace").text
            failed_after = client.get(f"/runs/{run_id}").json()
        history = check_history(restarted.url, run_id, events)

    assert events[-1][1] == "error"
    assert events[-1][2]["code"] == "storage_full"
    assert history.whole, history.problems
    assert ended["status"] == "failed"
    assert ended["error"]["code"] == "storage_full"
    assert refused.status_code == 507
    assert refused.json()["code"] == "storage_full"
    assert "Retry-After" in refused.headers
    assert again.status_code == 200, again.text
    assert again.json()["status"] == "done"
    # After a restart: the earlier run whole and unchanged, the failed run as it ended.
    assert earlier_after["status"] == "done"
    assert trace_after == earlier_trace
    assert failed_after["error"]["code"] == "storage_full"
    log = service.log()
    assert "storage: the disk of" in log
    assert "storage: the disk has room again" in log
    assert "Traceback" not in log + restarted.log()


def test_an_end_that_finds_no_room_is_stored_once_there_is_room_again(
    env: dict[str, str], procs: list[ServerProcess], small_disk: Path
) -> None:
    script = HeldOnce()
    with GeminiSimulator(script) as sim:
        settings = {
            **env,
            "GOOGLE_GEMINI_BASE_URL": sim.base_url,
            "LATS_DATA_DIR": str(small_disk / "data"),
            "LATS_STORAGE_RESERVE_BYTES": "0",
        }
        service = ServerProcess(settings)
        procs.append(service)
        service.start(timeout_s=180)
        with httpx.Client(base_url=service.url, timeout=60) as client:
            started = client.post("/runs", json={**BODY, "task": SECOND})
            assert started.status_code == 202, started.text
            run_id = started.json()["run_id"]
            assert script.held.wait(60)
            filler = fill(small_disk)
            script.release.set()
            wait_for(lambda: f"run={run_id} stops here" in service.log(), "the run to stop")
            while_full = client.get(f"/runs/{run_id}").json()
            filler.unlink()
            events = read_events(service.url, run_id, within_s=120)
            ended = client.get(f"/runs/{run_id}").json()
        history = check_history(service.url, run_id, events)

    assert while_full["status"] == "running"
    assert [type_ for _, type_, _ in events].count("done") == 1
    assert events[-1][1] == "done"
    assert history.whole, history.problems
    assert ended["status"] == "done"
    log = service.log()
    assert "storage: the disk of" in log
    assert f"run={run_id} claimed by owner=" in log
    assert "Traceback" not in log
