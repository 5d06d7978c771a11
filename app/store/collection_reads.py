"""`Collections`' reads, written once for both dialects (app/store/reads.py says how), with the
row mappings the dialects' writes share. Every read names the tenant: a collection, or a
document in it, of another tenant reads as none."""

from __future__ import annotations

from app.store.collection_base import CollectionRecord, DocumentRecord, PassageHit, passage_id
from app.store.reads import DbT, Part, Row, moment, row_record
from tools.documents.passages import Passage

# A document's columns (its record's fields but `status`), and as read of the documents table
# as `d`.
DOCUMENT_FIELDS = (
    "id",
    "collection_id",
    "title",
    "name",
    "kind",
    "sha256",
    "bytes",
    "pages",
    "passages",
    "created_at",
)
DOCUMENT_COLUMNS = ", ".join(f"d.{name}" for name in DOCUMENT_FIELDS)


class CollectionReads(Part[DbT]):
    """`Collections`' reads."""

    def _collections_sql(self) -> str:
        dialect = self._db.dialect
        # What a collection holds, counted where it is read: no count to keep in step.
        return (
            f"SELECT c.id, c.tenant, c.name, c.created_at,"
            f" (SELECT COUNT(*) FROM {dialect.documents} d WHERE d.collection_id = c.id)"
            " AS documents,"
            f" (SELECT CAST(COALESCE(SUM(d.bytes), 0) AS BIGINT) FROM {dialect.documents} d"
            " WHERE d.collection_id = c.id) AS bytes"
            f" FROM {dialect.collections} c WHERE c.tenant {dialect.same} ?"
        )

    async def get(self, tenant: str | None, collection_id: str) -> CollectionRecord | None:
        sql = f"{self._collections_sql()} AND c.id = ?"
        row = await self._db.one(sql, (tenant, collection_id))
        return None if row is None else collection_record(row)

    async def page(self, tenant: str | None, *, limit: int, offset: int) -> list[CollectionRecord]:
        sql = f"{self._collections_sql()} ORDER BY c.created_at DESC, c.id DESC LIMIT ? OFFSET ?"
        return [collection_record(r) for r in await self._db.all(sql, (tenant, limit, offset))]

    def _documents_sql(self) -> str:
        dialect = self._db.dialect
        return (
            f"SELECT {DOCUMENT_COLUMNS} FROM {dialect.documents} d"
            f" JOIN {dialect.collections} c ON c.id = d.collection_id"
            f" WHERE c.tenant {dialect.same} ? AND d.collection_id = ?"
        )

    async def document(
        self, tenant: str | None, collection_id: str, document_id: str
    ) -> DocumentRecord | None:
        sql = f"{self._documents_sql()} AND d.id = ?"
        row = await self._db.one(sql, (tenant, collection_id, document_id))
        return None if row is None else document_record(row)

    async def documents(
        self, tenant: str | None, collection_id: str, *, limit: int, offset: int
    ) -> list[DocumentRecord]:
        sql = f"{self._documents_sql()} ORDER BY d.created_at DESC, d.id DESC LIMIT ? OFFSET ?"
        rows = await self._db.all(sql, (tenant, collection_id, limit, offset))
        return [document_record(r) for r in rows]

    async def passages(
        self, tenant: str | None, collection_id: str, document_id: str, page: int
    ) -> list[Passage]:
        """The passages of page `page` (from 1; 1 for a document without pages), in order."""
        dialect = self._db.dialect
        sql = (
            f"SELECT p.page, p.number, p.heading, p.text FROM {dialect.passages} p"
            f" JOIN {dialect.documents} d ON d.id = p.document_id"
            f" JOIN {dialect.collections} c ON c.id = d.collection_id"
            f" WHERE c.tenant {dialect.same} ? AND d.collection_id = ? AND d.id = ?"
            " AND p.page IN (?, ?) ORDER BY p.number"
        )
        # A document without pages keeps its passages on page 0.
        unpaged = 0 if page == 1 else page
        rows = await self._db.all(sql, (tenant, collection_id, document_id, page, unpaged))
        return [
            Passage(
                page=row["page"] or None,
                number=int(row["number"]),
                heading=row["heading"],
                text=row["text"],
            )
            for row in rows
        ]


def collection_record(row: Row) -> CollectionRecord:
    return row_record(CollectionRecord, row, created_at=moment(row["created_at"]))


def document_record(row: Row) -> DocumentRecord:
    return row_record(DocumentRecord, row, DOCUMENT_FIELDS, created_at=moment(row["created_at"]))


def passage_hit(row: Row) -> PassageHit:
    """A search's row (`collection_id`, `document_id`, `page`, `number`, `text`, `title`,
    `name`, `score`) as a hit."""
    return PassageHit(
        passage_id=passage_id(row["document_id"], row["page"], row["number"]),
        collection_id=row["collection_id"],
        document_id=row["document_id"],
        title=row["title"],
        name=row["name"],
        page=row["page"] or None,  # 0: a document without pages
        text=row["text"],
        score=float(row["score"]),
    )
