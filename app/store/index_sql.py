"""The full-text index's statements (app/store/passage_index.py), written once with `?`
placeholders and each dialect's table names (`IndexSql.of`), and the steps that carry them: a
write or a search is a generator of statements (`Plan`) that each dialect runs its own way
(SQLite in one trip to a connection's thread, Postgres on its connection, COPY for the bulk
rows), sending each statement's rows back."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Generator, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from app.store.reads import Dialect, Row

CHUNK = 500
"""Rows named in one statement: words upserted on SQLite (3 values each; its bound is 32,766),
passage ids."""
INDEXED = "passage_id, collection_id, length, average, words, counts"
"""The columns of a passage's index row."""
T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class Step:
    """One statement of a plan: `args` for a statement whose rows the plan is sent back, or
    `rows` for a statement run once per row (nothing sent back); `copy` names the COPY that
    Postgres loads those rows with instead."""

    sql: str
    args: tuple[Any, ...] = ()
    rows: Sequence[tuple[Any, ...]] | None = None
    copy: str | None = None


Plan = Generator[Step, Sequence[Row], T]
"""Steps a dialect runs one after another, sending each one's rows back; returns a `T`."""


async def run_steps(plan: Plan[T], run: Callable[[Step], Awaitable[Sequence[Row]]]) -> T:
    """Run a plan's steps one after another with `run`, which answers a step's rows (none for
    a step of `rows`)."""
    try:
        step = next(plan)
        while True:
            step = plan.send(await run(step))
    except StopIteration as done:
        return done.value  # type: ignore[no-any-return]


@dataclass(frozen=True, slots=True)
class IndexSql:
    """The index's statements in one dialect's names and placeholders (`mark`)."""

    add_size: str  # a collection's passages and length added; its totals returned
    take_size: str  # a collection's passages and length taken away (passages, length, id)
    passage_ids: str  # a document's passages' ids with their (page, number)
    insert_posting: str  # into the fresh postings
    copy_postings: str
    merge: tuple[str, ...]  # a collection's fresh postings moved to the others
    insert_passage: str
    copy_passages: str
    indexed: str  # a document's passages' index rows
    orphans: str  # the ids of index rows whose passage is gone
    delete_posting: tuple[str, ...]  # a posting, from each postings table
    take_word: str  # a word id's passages count lowered
    drop_word: str  # a word id removed once no passage holds it
    delete_passage: str  # a passage's index row
    delete_collection: tuple[str, ...]  # a collection's index, before its passages go
    unindexed: str  # documents with a passage the index lacks
    document_passages: str  # a document's collection, passages' page, number and text
    tables: tuple[str, ...]  # the postings tables a search reads
    arrays: bool  # whether the dialect has arrays: list parameters, array aggregates (Postgres)
    dialect: Dialect
    mark: str

    @classmethod
    def of(
        cls, dialect: Dialect, mark: str = "?", *, staged: bool = True, arrays: bool = False
    ) -> IndexSql:
        """`staged`: postings are written to the fresh table and merged (SQLite); without,
        straight to the postings (Postgres, whose shared buffers take a B-tree's scattered
        inserts and write back only what they must). `arrays`: the dialect takes lists as
        array parameters, packs a search's candidates with array aggregates and ranks their
        guesses in SQL (Postgres, `ranked_candidates`); without, as comma-separated text, the
        guesses ranked by the search (SQLite, `postings` and `candidates`)."""

        def sql(text: str) -> str:
            return text.replace("?", mark)

        d = dialect
        sizes, words, postings = d.index_sizes, d.index_words, d.index_postings
        indexed = d.index_passages
        fresh = d.index_fresh if staged else postings
        tables = (postings, fresh) if staged else (postings,)
        of_collection = f"word_id IN (SELECT id FROM {words} WHERE collection_id = ?)"
        return cls(
            add_size=sql(
                f"INSERT INTO {sizes} (collection_id, passages, length, fresh)"
                " VALUES (?, ?, ?, ?) ON CONFLICT (collection_id) DO UPDATE SET"
                f" passages = {sizes}.passages + excluded.passages,"
                f" length = {sizes}.length + excluded.length,"
                f" fresh = {sizes}.fresh + excluded.fresh RETURNING passages, length, fresh"
            ),
            take_size=sql(
                f"UPDATE {sizes} SET passages = passages - ?, length = length - ?"
                " WHERE collection_id = ?"
            ),
            passage_ids=sql(f"SELECT id, page, number FROM {d.passages} WHERE document_id = ?"),
            insert_posting=sql(
                f"INSERT INTO {fresh} (word_id, weight, passage_id) VALUES (?, ?, ?)"
            ),
            copy_postings=f"COPY {fresh} (word_id, weight, passage_id) FROM STDIN",
            merge=()
            if not staged
            else (
                sql(
                    f"INSERT INTO {postings} (word_id, weight, passage_id)"
                    f" SELECT word_id, weight, passage_id FROM {fresh} WHERE {of_collection}"
                    " ORDER BY word_id, weight DESC, passage_id DESC"
                ),
                sql(f"DELETE FROM {fresh} WHERE {of_collection}"),
                sql(f"UPDATE {sizes} SET fresh = 0 WHERE collection_id = ?"),
            ),
            insert_passage=sql(f"INSERT INTO {indexed} ({INDEXED}) VALUES (?, ?, ?, ?, ?, ?)"),
            copy_passages=f"COPY {indexed} ({INDEXED}) FROM STDIN",
            indexed=sql(
                f"SELECT {INDEXED} FROM {indexed} WHERE passage_id IN"
                f" (SELECT id FROM {d.passages} WHERE document_id = ?)"
            ),
            orphans=(
                # Ids only: the scan reads a narrow index, not the rows' blobs.
                f"SELECT i.passage_id FROM {indexed} i WHERE NOT EXISTS"
                f" (SELECT 1 FROM {d.passages} p WHERE p.id = i.passage_id)"
            ),
            delete_posting=tuple(
                sql(f"DELETE FROM {table} WHERE word_id = ? AND weight = ? AND passage_id = ?")
                for table in tables
            ),
            take_word=sql(f"UPDATE {words} SET passages = passages - ? WHERE id = ?"),
            drop_word=sql(f"DELETE FROM {words} WHERE id = ? AND passages <= 0"),
            delete_passage=sql(f"DELETE FROM {indexed} WHERE passage_id = ?"),
            delete_collection=(
                *(sql(f"DELETE FROM {table} WHERE {of_collection}") for table in tables),
                sql(f"DELETE FROM {indexed} WHERE collection_id = ?"),
                sql(f"DELETE FROM {words} WHERE collection_id = ?"),
                sql(f"DELETE FROM {sizes} WHERE collection_id = ?"),
            ),
            unindexed=(
                f"SELECT DISTINCT p.document_id FROM {d.passages} p WHERE NOT EXISTS"
                f" (SELECT 1 FROM {indexed} i WHERE i.passage_id = p.id)"
            ),
            document_passages=sql(
                f"SELECT collection_id, page, number, text FROM {d.passages}"
                " WHERE document_id = ? ORDER BY page, number"
            ),
            tables=tables,
            arrays=arrays,
            dialect=dialect,
            mark=mark,
        )

    def _marks(self, n: int) -> str:
        return ", ".join([self.mark] * n)

    def add_words(self, collection_id: str, held: Sequence[tuple[str, int]]) -> list[Step]:
        """A collection's words (each with how many of a document's passages hold it) added to
        their counts, each word's id returned: in one statement of two arrays on Postgres, in
        statements of `CHUNK` rows of values on SQLite."""
        words = self.dialect.index_words
        upsert = (
            f" ON CONFLICT (collection_id, word) DO UPDATE SET"
            f" passages = {words}.passages + excluded.passages RETURNING id, word"
        )
        insert = f"INSERT INTO {words} (collection_id, word, passages)"
        if self.arrays:
            unnest = "SELECT %s, w, n FROM unnest(%s::text[], %s::bigint[]) AS t(w, n)"
            arrays = (collection_id, [w for w, _ in held], [n for _, n in held])
            return [Step(f"{insert} {unnest}{upsert}", arrays)]
        steps = []
        for start in range(0, len(held), CHUNK):
            chunk = held[start : start + CHUNK]
            values = ", ".join([f"({self._marks(3)})"] * len(chunk))
            args = tuple(x for word, n in chunk for x in (collection_id, word, n))
            steps.append(Step(f"{insert} VALUES {values}{upsert}", args))
        return steps

    def sizes(self, n: int) -> str:
        """The sizes of the tenant's collections among `n` ids (the ids, then the tenant)."""
        d = self.dialect
        return (
            f"SELECT s.collection_id, s.passages, s.length FROM {d.collections} c"
            f" JOIN {d.index_sizes} s ON s.collection_id = c.id"
            f" WHERE c.id IN ({self._marks(n)}) AND c.tenant {d.same} {self.mark}"
        )

    def words(self, collections: int, words: int) -> str:
        """The ids and passage counts of `words` words in `collections` collections."""
        return (
            f"SELECT id, word, passages FROM {self.dialect.index_words}"
            f" WHERE collection_id IN ({self._marks(collections)})"
            f" AND word IN ({self._marks(words)})"
        )

    def _read(self, lists: int, part: str) -> str:
        """The postings of `lists` word ids, fresh and merged (for each word and table: the
        factor of its weights, its id, how many of its passages to read, best first), each as
        a row of its passage's id and its `part` (of `weight` and the factor `?`)."""
        m = self.mark
        return " UNION ALL ".join(
            f"SELECT passage_id, {part} AS part FROM (SELECT passage_id, weight"
            f" FROM {table} WHERE word_id = {m}"
            f" ORDER BY weight DESC, passage_id DESC LIMIT {m}) AS w{i}_{t}"
            for i in range(lists)
            for t, table in enumerate(self.tables)
        )

    def postings(self, lists: int) -> str:
        """SQLite's first read of a search's candidates: the postings of `lists` word ids
        (`_read`; each word's factor its inverse document frequency times `GUESS_SCALE`) in
        one row: their passages' ids and their guessed parts as integers, comma-separated
        (`ranking.Guesses`), which the search sums and ranks itself.

        Grouping and ranking two to three thousand postings (a question's, over 100,000
        passages) in SQL took more than half of a search's time; packed into one row as
        integers and summed in numpy they take about half as long (docs/benchmarks.md §17)."""
        parts = self._read(lists, f"CAST(weight * {self.mark} AS INTEGER)")
        return f"SELECT group_concat(passage_id) AS ids, group_concat(part) AS parts FROM ({parts})"

    def candidates(self) -> str:
        """SQLite's second read: the index rows of the passages whose ids the one parameter
        lists (JSON text), packed (`pack`)."""
        return self._pack(f"WHERE i.passage_id IN (SELECT value FROM json_each({self.mark}))")

    def ranked_candidates(self, lists: int) -> str:
        """Postgres's one read of a search's candidates: the postings of `lists` word ids
        (`_read`; each word's factor its inverse document frequency) summed by passage, the
        best `?` of those guessed scores, their index rows packed (`pack`)."""
        m = self.mark
        guessed = (
            f"SELECT passage_id, SUM(part) AS guess FROM ({self._read(lists, f'weight * {m}')})"
            f" AS found GROUP BY passage_id ORDER BY guess DESC, passage_id LIMIT {m}"
        )
        return self._pack(f"JOIN ({guessed}) AS g ON g.passage_id = i.passage_id")

    def _pack(self, chosen: str) -> str:
        """The index rows of the passages `chosen` (a join or a condition on `i`) in one row
        (`Candidates.of_packed`): their ids, their lengths, their words' ids and counts one
        after another, and each one's number of words (as many as its counts' bytes halved).

        One row, not a row a candidate: a thread that reads rows into Python takes the
        interpreter's lock back after each one, and two searches reading theirs at once
        spend more time handing it over than reading."""
        if self.arrays:
            ids, lengths = "array_agg(i.passage_id)", "array_agg(i.length)"
            terms, counts = "string_agg(i.words, ''::bytea)", "string_agg(i.counts, ''::bytea)"
            sizes = "array_agg(octet_length(i.counts))"
        else:
            ids, lengths = "group_concat(i.passage_id)", "group_concat(i.length)"
            terms = "CAST(group_concat(i.words, '') AS BLOB)"
            counts = "CAST(group_concat(i.counts, '') AS BLOB)"
            sizes = "group_concat(length(i.counts))"
        return (
            f"SELECT {ids} AS ids, {lengths} AS lengths, {terms} AS terms,"
            f" {counts} AS counts, {sizes} AS sizes"
            f" FROM {self.dialect.index_passages} i {chosen}"
        )

    def passages(self, n: int) -> str:
        """The index rows of `n` passage ids."""
        return (
            f"SELECT {INDEXED} FROM {self.dialect.index_passages}"
            f" WHERE passage_id IN ({self._marks(n)})"
        )

    def hits(self, n: int) -> str:
        d = self.dialect
        return (
            f"SELECT p.id, p.collection_id, p.document_id, p.page, p.number, p.text, d.title,"
            f" d.name FROM {d.passages} p JOIN {d.documents} d ON d.id = p.document_id"
            f" WHERE p.id IN ({self._marks(n)})"
        )
