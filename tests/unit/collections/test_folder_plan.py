"""Loading a folder into its collection, planned without I/O: unchanged files kept, new and
changed ones stored, the documents of files gone or changed deleted, a content read once."""

from __future__ import annotations

from datetime import UTC, datetime

from app.collections.folder_plan import FolderFile, plan_load
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


def test_a_first_load_stores_every_file() -> None:
    plan = plan_load([], [_file("b.md", "2"), _file("a.md", "1")])

    assert [f.path for f in plan.first] == ["a.md", "b.md"]
    assert (plan.delete, plan.after, plan.kept) == ((), (), 0)


def test_an_unchanged_folder_changes_nothing() -> None:
    plan = plan_load([_stored("d1", "a.md", "1")], [_file("a.md", "1")])

    assert plan.unchanged
    assert plan.kept == 1


def test_a_changed_file_is_stored_before_its_old_document_is_deleted() -> None:
    plan = plan_load([_stored("d1", "a.md", "1")], [_file("a.md", "2")])

    assert [f.sha256 for f in plan.first] == ["2"]
    assert [d.id for d in plan.delete] == ["d1"]
    assert plan.after == ()


def test_the_document_of_a_file_gone_is_deleted() -> None:
    plan = plan_load([_stored("d1", "a.md", "1"), _stored("d2", "b.md", "2")], [_file("a.md", "1")])

    assert [d.id for d in plan.delete] == ["d2"]
    assert (plan.first, plan.after, plan.kept) == ((), (), 1)


def test_a_moved_file_is_stored_after_its_old_document_is_deleted() -> None:
    # Stored first, the store would answer it with the document about to be deleted.
    plan = plan_load([_stored("d1", "old/a.md", "1")], [_file("new/a.md", "1")])

    assert [d.id for d in plan.delete] == ["d1"]
    assert [f.path for f in plan.after] == ["new/a.md"]
    assert plan.first == ()


def test_two_files_of_the_same_content_are_read_once() -> None:
    kept = plan_load([_stored("d1", "a.md", "1")], [_file("a.md", "1"), _file("copy.md", "1")])
    new = plan_load([], [_file("b.md", "2"), _file("a.md", "2")])

    assert kept.unchanged
    assert [f.path for f in new.first] == ["a.md"]
