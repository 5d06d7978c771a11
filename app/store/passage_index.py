"""The full-text index of collections' passages, the same tables and the same statements on both
backends: what a document's passages add to it, what its deletion takes out, and a search.

The tables (each dialect's schema.py creates them, under its table names):

- `index_sizes`: per collection, its passages and their words together (BM25's statistics),
  and how many fresh postings it has written since their last merge (below).
- `index_words`: per collection, each word (app/store/query_words.py) with an id and how many
  of the collection's passages hold it.
- `index_postings`: per word id, its passages, keyed (word id, weight, passage id), the weight
  being the word's BM25 `impact` in that passage as it was written. A word's best passages are
  the first of its key range, so a search reads those and stops (`BEST`).
- `index_fresh`: the postings written since the collection's last merge, keyed alike. A
  document's postings land all over a large table's key range, one page per word or so, and a
  transaction rewrites every page it touches: written to this small table instead, they touch
  few pages, and once a collection's fresh postings reach `MERGE_AT` they are moved to
  `index_postings` in key order, one pass over it. A search reads both. (SQLite's: Postgres
  writes to `index_postings` straight away, its shared buffers taking the scattered inserts.)
- `index_passages`: per passage, its length in words, the average length it was weighed by, and
  its words' ids and counts (app/store/ranking.py `Candidates`): what a search scores exactly and
  a deletion takes back out.

A search reads, for each of the query's words, every passage holding it when few do (`WHOLE`),
else its `BEST` by weight; guesses each passage's score from the postings read (a word's weight
times its inverse document frequency, summed); and scores the best `RESCORED` of those guesses
exactly with today's statistics (app/store/ranking.py `scores`). Its work is bounded by the
query's words, whatever the collections' size: no passage is read but the candidates.

The statements are written once with `?` placeholders and each dialect's table names
(`IndexSql.of`). The steps of a write or a search are generators (`Plan`): each yields a
statement (`Step`) and is sent the rows it read, so that each dialect runs the same steps its
own way (SQLite in one trip to a connection's thread, Postgres on its connection, COPY for the
bulk rows), inside the transaction its caller holds.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Awaitable, Callable, Generator, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

import numpy as np

from app.store.query_words import passage_words
from app.store.ranking import (
    COUNTS,
    MAX_COUNT,
    TERM_IDS,
    Candidates,
    best,
    idf,
    impacts,
    scores,
)
from app.store.reads import Dialect, Row
from tools.documents.passages import Passage

WHOLE = 1_000
"""A word held by at most this many passages of a collection has all of them read."""
BEST = 100
"""Of a commoner word, the passages of its highest weights a search reads."""
RESCORED = 300
"""How many of the best-guessed passages are scored exactly."""
CHUNK = 500
"""Rows named in one statement: words upserted on SQLite (3 values each; its bound is 32,766),
passage ids."""
_INDEXED = "passage_id, collection_id, length, average, words, counts"
MERGE_AT = 500_000
"""A collection's postings written since the last merge that have the next write merge them."""
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
    arrays: bool  # whether the dialect takes a list as an array parameter (Postgres)
    dialect: Dialect
    mark: str

    @classmethod
    def of(
        cls, dialect: Dialect, mark: str = "?", *, staged: bool = True, arrays: bool = False
    ) -> IndexSql:
        """`staged`: postings are written to the fresh table and merged (SQLite); without,
        straight to the postings (Postgres, whose shared buffers take a B-tree's scattered
        inserts and write back only what they must). `arrays`: the dialect takes lists as
        array parameters (Postgres)."""

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
            insert_passage=sql(f"INSERT INTO {indexed} ({_INDEXED}) VALUES (?, ?, ?, ?, ?, ?)"),
            copy_passages=f"COPY {indexed} ({_INDEXED}) FROM STDIN",
            indexed=sql(
                f"SELECT {_INDEXED} FROM {indexed} WHERE passage_id IN"
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

    def candidates(self, lists: int) -> str:
        """The passages of `lists` word ids' postings, fresh and merged (for each word and
        table: the word's inverse document frequency, its id, how many of its passages to
        read, best first), the best `?` by their guessed scores, in one row
        (`Candidates.of_packed`): their ids, their lengths, their words' ids and counts one
        after another, and each one's number of words (as many as its counts' bytes halved).

        One row, not a row a candidate: a thread that reads rows into Python takes the
        interpreter's lock back after each one, and two searches reading theirs at once
        spend more time handing it over than reading."""
        m = self.mark
        parts = " UNION ALL ".join(
            f"SELECT passage_id, weight * {m} AS part FROM (SELECT passage_id, weight"
            f" FROM {table} WHERE word_id = {m}"
            f" ORDER BY weight DESC, passage_id DESC LIMIT {m}) AS w{i}_{t}"
            for i in range(lists)
            for t, table in enumerate(self.tables)
        )
        guessed = (
            f"SELECT passage_id, SUM(part) AS guess FROM ({parts}) AS found"
            f" GROUP BY passage_id ORDER BY guess DESC, passage_id LIMIT {m}"
        )
        if self.arrays:
            ids, lengths = "array_agg(i.passage_id)", "array_agg(i.length)"
            terms, counts = "string_agg(i.words, ''::bytea)", "string_agg(i.counts, ''::bytea)"
            sizes = "array_agg(octet_length(i.counts))"
        else:
            ids, lengths = "group_concat(i.passage_id)", "group_concat(i.length)"
            terms = "CAST(group_concat(i.words, '') AS BLOB)"
            counts = "CAST(group_concat(i.counts, '') AS BLOB)"
            sizes = "group_concat(length(i.counts))"
        packed = (
            f"{ids} AS ids, {lengths} AS lengths, {terms} AS terms, {counts} AS counts,"
            f" {sizes} AS sizes"
        )
        return (
            f"SELECT {packed} FROM ({guessed}) AS g"
            f" JOIN {self.dialect.index_passages} i ON i.passage_id = g.passage_id"
        )

    def passages(self, n: int) -> str:
        """The index rows of `n` passage ids."""
        return (
            f"SELECT {_INDEXED} FROM {self.dialect.index_passages}"
            f" WHERE passage_id IN ({self._marks(n)})"
        )

    def hits(self, n: int) -> str:
        d = self.dialect
        return (
            f"SELECT p.id, p.collection_id, p.document_id, p.page, p.number, p.text, d.title,"
            f" d.name FROM {d.passages} p JOIN {d.documents} d ON d.id = p.document_id"
            f" WHERE p.id IN ({self._marks(n)})"
        )


@dataclass(frozen=True, slots=True)
class DocumentWords:
    """A document's passages' words, counted before its transaction: each passage's
    (page, number), word counts and length, and how many of its passages hold each word."""

    keys: list[tuple[int, int]]
    counts: list[Counter[str]]
    held: Counter[str]

    @classmethod
    def of(cls, passages: Sequence[Passage]) -> DocumentWords:
        counts = [passage_words(p.text) for p in passages]
        held: Counter[str] = Counter()
        for words in counts:
            held.update(words.keys())
        return cls([(p.page or 0, p.number) for p in passages], counts, held)

    @classmethod
    def of_rows(cls, rows: Sequence[Row]) -> DocumentWords:
        """Of stored passages' rows (`page`, `number`, `text`)."""
        return cls.of([Passage(int(r["page"]), int(r["number"]), None, r["text"]) for r in rows])


def index_document(
    sql: IndexSql, collection_id: str, document_id: str, words: DocumentWords
) -> Plan[None]:
    """Index a stored document's passages (its passages' rows written already)."""
    if not words.counts:
        return
    ids: dict[tuple[int, int], int] = {
        (int(r["page"]), int(r["number"])): int(r["id"])
        for r in (yield Step(sql.passage_ids, (document_id,)))
    }
    sizes = np.array([len(c) for c in words.counts], np.int64)  # words a passage holds
    lengths = np.array([sum(c.values()) for c in words.counts], np.int64)
    written = int(sizes.sum()) if sql.merge else 0  # fresh postings
    added = (collection_id, len(words.counts), int(lengths.sum()), written)
    (size,) = yield Step(sql.add_size, added)
    average = int(size["length"]) / max(int(size["passages"]), 1)
    # In the words' order, so that two writers to a collection lock its words in one order.
    word_ids: dict[str, int] = {}
    for step in sql.add_words(collection_id, sorted(words.held.items())):
        word_ids.update((str(r["word"]), int(r["id"])) for r in (yield step))
    passage_ids = np.array([ids[key] for key in words.keys], np.int64)
    owner = np.repeat(np.arange(len(sizes)), sizes)
    word_col = np.fromiter((word_ids[w] for c in words.counts for w in c), np.int64, owner.size)
    counts = np.minimum(
        np.fromiter((n for c in words.counts for n in c.values()), np.int64, owner.size),
        MAX_COUNT,
    )
    weights = impacts(counts.astype(np.float64), lengths[owner].astype(np.float64), average)
    # Postings in key order (word, then weight and passage downwards): a B-tree takes sorted
    # rows fastest.
    order = np.lexsort((-passage_ids[owner], -weights, word_col))
    postings = list(
        zip(
            word_col[order].tolist(),
            weights[order].tolist(),
            passage_ids[owner][order].tolist(),
            strict=True,
        )
    )
    # Each passage's words by id, with their counts.
    order = np.lexsort((word_col, owner))
    ends = np.cumsum(sizes).tolist()
    held_words = np.split(word_col[order].astype(TERM_IDS), ends[:-1])
    held_counts = np.split(counts[order].astype(COUNTS), ends[:-1])
    passages = [
        (int(passage_id), collection_id, int(length), average, ws.tobytes(), ns.tobytes())
        for passage_id, length, ws, ns in zip(
            passage_ids.tolist(), lengths.tolist(), held_words, held_counts, strict=True
        )
    ]
    yield Step(sql.insert_posting, rows=postings, copy=sql.copy_postings)
    yield Step(sql.insert_passage, rows=passages, copy=sql.copy_passages)
    if sql.merge and int(size["fresh"]) >= MERGE_AT:
        for statement in sql.merge:
            yield Step(statement, (collection_id,))


def unindex_document(sql: IndexSql, document_id: str) -> Plan[None]:
    """Take a document's passages out of the index (before the passages' rows go)."""
    yield from _unindex((yield Step(sql.indexed, (document_id,))), sql)


def _unindex(rows: Sequence[Row], sql: IndexSql) -> Plan[None]:
    """Take passages out of the index, given their index rows: their postings, their part of
    their words' and collections' counts, and the rows."""
    if not rows:
        return
    held_words = [np.frombuffer(bytes(r["words"]), TERM_IDS) for r in rows]
    word_col = np.concatenate(held_words).astype(np.int64)
    counts = np.concatenate([np.frombuffer(bytes(r["counts"]), COUNTS) for r in rows])
    owner = np.repeat(np.arange(len(rows)), [len(ws) for ws in held_words])
    lengths = np.array([int(r["length"]) for r in rows], np.int64)
    averages = np.array([float(r["average"]) for r in rows], np.float64)
    passage_ids = np.array([int(r["passage_id"]) for r in rows], np.int64)
    weights = impacts(counts.astype(np.float64), lengths[owner].astype(np.float64), averages[owner])
    postings = list(
        zip(word_col.tolist(), weights.tolist(), passage_ids[owner].tolist(), strict=True)
    )
    taken, held = np.unique(word_col, return_counts=True)
    sizes: defaultdict[str, list[int]] = defaultdict(lambda: [0, 0])
    for r, length in zip(rows, lengths.tolist(), strict=True):
        sizes[str(r["collection_id"])][0] += 1
        sizes[str(r["collection_id"])][1] += length
    for statement in sql.delete_posting:
        yield Step(statement, rows=postings)
    yield Step(sql.take_word, rows=list(zip(held.tolist(), taken.tolist(), strict=True)))
    yield Step(sql.drop_word, rows=[(word_id,) for word_id in taken.tolist()])
    yield Step(sql.take_size, rows=[(n, length, c) for c, (n, length) in sorted(sizes.items())])
    yield Step(sql.delete_passage, rows=[(passage_id,) for passage_id in passage_ids.tolist()])


def reindex(sql: IndexSql) -> Plan[int]:
    """Bring the index in step with the passages stored: the index rows of passages that are
    gone taken out, and every document with a passage the index lacks (a store written before
    the index, or whose tables were changed by hand) indexed anew, its index rows removed, then
    written whole. How many documents it indexed."""
    orphans = [int(r["passage_id"]) for r in (yield Step(sql.orphans))]
    for start in range(0, len(orphans), CHUNK):
        chunk = tuple(orphans[start : start + CHUNK])
        yield from _unindex((yield Step(sql.passages(len(chunk)), chunk)), sql)
    documents = [r["document_id"] for r in (yield Step(sql.unindexed))]
    for document_id in documents:
        yield from unindex_document(sql, document_id)
        rows = yield Step(sql.document_passages, (document_id,))
        if rows:
            collection_id = str(rows[0]["collection_id"])
            yield from index_document(sql, collection_id, document_id, DocumentWords.of_rows(rows))
    return len(documents)


def search(
    sql: IndexSql, tenant: str | None, ids: Sequence[str], words: Sequence[str], k: int
) -> Plan[list[dict[str, Any]]]:
    """The best `k` passages of the tenant's collections among `ids` holding any of `words`
    (app/store/query_words.py `query_terms`), best first: rows with the passage's `id`,
    `collection_id`, `document_id`, `page`, `number`, `text`, its document's `title` and
    `name`, and its `score`."""
    sizes = yield Step(sql.sizes(len(ids)), (*ids, tenant))
    passages = sum(int(r["passages"]) for r in sizes)
    if passages <= 0 or not words:
        return []
    scope = [str(r["collection_id"]) for r in sizes]
    average = sum(int(r["length"]) for r in sizes) / passages
    found = yield Step(sql.words(len(scope), len(words)), (*scope, *words))
    holding: defaultdict[str, int] = defaultdict(int)
    for r in found:
        holding[r["word"]] += int(r["passages"])
    weights = {
        int(r["id"]): idf(passages, holding[r["word"]]) for r in found if int(r["passages"]) > 0
    }
    if not weights:
        return []
    lists = sorted((int(r["id"]), int(r["passages"])) for r in found if int(r["id"]) in weights)
    args = tuple(
        x
        for word_id, held in lists
        for x in (weights[word_id], word_id, held if held <= WHOLE else BEST) * len(sql.tables)
    )
    packed = yield Step(sql.candidates(len(lists)), (*args, max(RESCORED, k)))
    candidates = Candidates.of_packed(packed[0])
    top = best(candidates, scores(candidates, weights, average), k)
    if not top:
        return []
    score = dict(top)
    found_rows = yield Step(sql.hits(len(top)), tuple(score))
    hits = [{**_row(r), "score": score[int(r["id"])]} for r in found_rows]
    return sorted(hits, key=lambda h: (-h["score"], int(h["id"])))


def _row(row: Row) -> dict[str, Any]:
    names = ("id", "collection_id", "document_id", "page", "number", "text", "title", "name")
    return {name: row[name] for name in names}
