"""The commit a benchmark's rows record: the checkout's, marked when its files differ."""

from __future__ import annotations

import subprocess
from pathlib import Path

from bench.machine import code_revision


def _git(root: Path, *args: str) -> str:
    done = subprocess.run(["git", *args], cwd=root, capture_output=True, text=True, check=True)
    return done.stdout.strip()


def test_the_revision_is_the_short_commit_and_a_changed_file_marks_it(tmp_path: Path) -> None:
    _git(tmp_path, "init", "-q")
    (tmp_path / "a.py").write_text("x = 1\n")
    _git(tmp_path, "add", "a.py")
    _git(tmp_path, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "one")
    head = _git(tmp_path, "rev-parse", "--short", "HEAD")

    assert code_revision(tmp_path) == head
    (tmp_path / "new.py").write_text("untracked files do not count\n")
    assert code_revision(tmp_path) == head
    (tmp_path / "a.py").write_text("x = 2\n")
    assert code_revision(tmp_path) == head + "+"


def test_outside_a_repository_the_revision_is_unknown(tmp_path: Path) -> None:
    assert code_revision(tmp_path) == "unknown"
