"""SQLite's memory statistics are turned off once per process, before it opens a database, and
never while something holds SQLite memory (app/store/sqlite/library.py). Each case runs in a
process of its own: the setting is the process's."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

_CASE = """
import ctypes, json, sqlite3, _sqlite3
from app.store.sqlite.library import without_memory_statistics

lib = ctypes.CDLL(_sqlite3.__file__)
lib.sqlite3_memory_used.restype = ctypes.c_int64
held = sqlite3.connect(":memory:") if OPEN_FIRST else None
first = without_memory_statistics()
again = without_memory_statistics()
conn = sqlite3.connect(":memory:")
conn.execute("CREATE TABLE t (x TEXT)")
conn.executemany("INSERT INTO t VALUES (?)", [("a" * 100,)] * 1000)
rows = conn.execute("SELECT count(*), sum(length(x)) FROM t").fetchone()
old = held.execute("SELECT 41 + 1").fetchone()[0] if held else None
print(json.dumps({"first": first, "again": again, "counted": lib.sqlite3_memory_used(),
                  "rows": list(rows), "old": old}))
"""


def _run(open_first: bool) -> dict[str, object]:
    code = textwrap.dedent(_CASE).replace("OPEN_FIRST", str(open_first))
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True
    )
    found: dict[str, object] = json.loads(done.stdout.strip().splitlines()[-1])
    return found


def test_a_process_that_has_not_touched_sqlite_turns_its_statistics_off() -> None:
    found = _run(open_first=False)

    assert found["first"] is True
    assert found["again"] is True
    assert found["counted"] == 0  # a database open and written, and nothing counted
    assert found["rows"] == [1000, 100_000]


def test_a_connection_already_open_leaves_the_library_as_it_is() -> None:
    found = _run(open_first=True)

    assert found["first"] is False
    assert found["again"] is False
    assert isinstance(found["counted"], int)
    assert found["counted"] > 0
    assert found["rows"] == [1000, 100_000]
    assert found["old"] == 42  # the connection opened before still works
