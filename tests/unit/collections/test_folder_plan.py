"""Loading a folder into its collection, planned without I/O: unchanged files kept, new and
changed ones stored, the documents of files gone or changed deleted, a content read once."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime

import pytest

from app.collections.folder_plan import FolderFile, FolderPlan, plan_load
from app.store.collection_base import DocumentRecord


def _stored(doc_id: str, name: str, sha256: str) -> DocumentRecord:
    return DocumentRecord(
        id=doc_id,
        collection_id="c1",
        title=name,
        name=name,
        kind="text",
        sha256=sha256,
        bytes=1,
        pages=1,
        passages=1,
        created_at=datetime(2025, 1, 1, tzinfo=UTC),
    )


def _file(path: str, sha256: str) -> FolderFile:
    return FolderFile(path, sha256, 1)


@dataclass(frozen=True)
class Steps:
    """A plan's steps in order: the files stored first (path, SHA-256), the documents deleted,
    the files stored after the deletions; how many documents it keeps; whether it does nothing."""

    first: tuple[tuple[str, str], ...] = ()
    delete: tuple[str, ...] = ()
    after: tuple[tuple[str, str], ...] = ()
    kept: int = 0
    unchanged: bool = False

    @classmethod
    def of(cls, plan: FolderPlan) -> Steps:
        return cls(
            tuple((f.path, f.sha256) for f in plan.first),
            tuple(d.id for d in plan.delete),
            tuple((f.path, f.sha256) for f in plan.after),
            plan.kept,
            plan.unchanged,
        )


@pytest.mark.parametrize(
    ("stored", "files", "steps"),
    [
        pytest.param(
            [],
            [_file("b.md", "2"), _file("a.md", "1")],
            Steps(first=(("a.md", "1"), ("b.md", "2"))),
            id="a_first_load_stores_every_file",
        ),
        pytest.param(
            [_stored("d1", "a.md", "1")],
            [_file("a.md", "1")],
            Steps(kept=1, unchanged=True),
            id="an_unchanged_folder_changes_nothing",
        ),
        pytest.param(
            [_stored("d1", "a.md", "1")],
            [_file("a.md", "2")],
            Steps(first=(("a.md", "2"),), delete=("d1",)),
            id="a_changed_file_is_stored_before_its_old_document_is_deleted",
        ),
        pytest.param(
            [_stored("d1", "a.md", "1"), _stored("d2", "b.md", "2")],
            [_file("a.md", "1")],
            Steps(delete=("d2",), kept=1),
            id="the_document_of_a_file_gone_is_deleted",
        ),
        # Stored first, the store would answer it with the document about to be deleted.
        pytest.param(
            [_stored("d1", "old/a.md", "1")],
            [_file("new/a.md", "1")],
            Steps(delete=("d1",), after=(("new/a.md", "1"),)),
            id="a_moved_file_is_stored_after_its_old_document_is_deleted",
        ),
    ],
)
def test_a_load_stores_keeps_and_deletes_as_the_folder_changed(
    stored: list[DocumentRecord], files: list[FolderFile], steps: Steps
) -> None:
    assert Steps.of(plan_load(stored, files)) == steps


def test_two_files_of_the_same_content_are_read_once() -> None:
    kept = plan_load([_stored("d1", "a.md", "1")], [_file("a.md", "1"), _file("copy.md", "1")])
    new = plan_load([], [_file("b.md", "2"), _file("a.md", "2")])

    assert kept.unchanged
    assert [f.path for f in new.first] == ["a.md"]
