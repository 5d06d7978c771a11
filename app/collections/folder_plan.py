"""What loading a folder into its collection does, decided without I/O: from the folder's files
(path and SHA-256) and the documents the collection holds, which files are read and stored and
which documents are deleted (app/collections/local_folder.py does it).

A document is kept while its file is there with the same content (its `name` is the file's
path in the folder). A file whose content no kept document holds is read; two files with the
same content are read once (the store keeps one document per content, named after the first).
A document whose file is gone or changed is deleted. Files whose content a deleted document
held (a file moved or renamed) are read only after the deletions, since the store would
otherwise answer them with the document about to go; every other file is stored before the
deletions, so a changed file's old document stays searchable until its new one is.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from app.store.collection_base import DocumentRecord


@dataclass(frozen=True, slots=True)
class FolderFile:
    """A file of the folder: its path in the folder (POSIX form), its content's SHA-256 and
    its size."""

    path: str
    sha256: str
    size: int


@dataclass(frozen=True, slots=True)
class FolderPlan:
    """The steps of one load, in order: store `first`, delete `delete`, store `after`."""

    first: tuple[FolderFile, ...]
    delete: tuple[DocumentRecord, ...]
    after: tuple[FolderFile, ...]
    kept: int

    @property
    def unchanged(self) -> bool:
        return not (self.first or self.delete or self.after)


def plan_load(stored: Sequence[DocumentRecord], files: Sequence[FolderFile]) -> FolderPlan:
    """The plan that makes the collection holding `stored` hold `files`."""
    on_disk = {(f.path, f.sha256) for f in files}
    kept = [d for d in stored if (d.name, d.sha256) in on_disk]
    delete = tuple(d for d in stored if (d.name, d.sha256) not in on_disk)
    held = {d.sha256 for d in kept}
    leaving = {d.sha256 for d in delete}
    first: list[FolderFile] = []
    after: list[FolderFile] = []
    for file in sorted(files, key=lambda f: f.path):
        if file.sha256 in held:
            continue
        held.add(file.sha256)  # a second file of the same content is not read again
        (after if file.sha256 in leaving else first).append(file)
    return FolderPlan(tuple(first), delete, tuple(after), len(kept))
