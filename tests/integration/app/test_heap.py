"""The start-up heap is frozen once per process (gc.freeze moves the whole heap, so it is no
unit test: it changes the collector of the process running the tests)."""

from __future__ import annotations

import gc

from app.heap import freeze_startup_heap


def test_the_start_up_heap_is_frozen_once() -> None:
    freeze_startup_heap()
    frozen = gc.get_freeze_count()
    freeze_startup_heap()

    assert frozen > 0
    assert gc.get_freeze_count() == frozen
