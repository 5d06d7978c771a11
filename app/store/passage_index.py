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

The statements are written once for both dialects (app/store/index_sql.py). A write or a
search here is a generator of them (`Plan`), which each dialect runs its own way inside the
transaction its caller holds.
"""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np

from app.store.index_sql import CHUNK, IndexSql, Plan, Step
from app.store.query_words import passage_words
from app.store.ranking import (
    COUNTS,
    GUESS_SCALE,
    MAX_COUNT,
    TERM_IDS,
    Candidates,
    Guesses,
    best,
    idf,
    impacts,
    scores,
)
from app.store.reads import Row
from tools.documents.passages import Passage

WHOLE = 1_000
"""A word held by at most this many passages of a collection has all of them read."""
BEST = 100
"""Of a commoner word, the passages of its highest weights a search reads."""
RESCORED = 300
"""How many of the best-guessed passages are scored exactly."""
MERGE_AT = 500_000
"""A collection's postings written since the last merge that have the next write merge them."""


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


class SearchQuery(NamedTuple):
    """What a search is asked: the best `k` passages of the `tenant`'s collections among `ids`
    holding any of `words` (app/store/query_words.py `query_terms`). Plain values, so that it
    can be sent to another process (app/store/sqlite/search_processes.py)."""

    tenant: str | None
    ids: tuple[str, ...]
    words: tuple[str, ...]
    k: int


def search(sql: IndexSql, query: SearchQuery) -> Plan[list[dict[str, Any]]]:
    """The passages `query` asks for, best first: rows with the passage's `id`,
    `collection_id`, `document_id`, `page`, `number`, `text`, its document's `title` and
    `name`, and its `score`."""
    tenant, ids, words, k = query
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
    rescored = max(RESCORED, k)
    if sql.arrays:
        # Postgres sums and ranks the postings itself, in the statement that packs them.
        args = (*_read(lists, weights, len(sql.tables)), rescored)
        packed = yield Step(sql.ranked_candidates(len(lists)), args)
    else:
        scaled = {word_id: weight * GUESS_SCALE for word_id, weight in weights.items()}
        read = yield Step(sql.postings(len(lists)), _read(lists, scaled, len(sql.tables)))
        chosen = Guesses.of_packed(read[0]).best(rescored)
        if not chosen:
            return []
        packed = yield Step(sql.candidates(), (json.dumps(chosen),))
    candidates = Candidates.of_packed(packed[0])
    top = best(candidates, scores(candidates, weights, average), k)
    if not top:
        return []
    score = dict(top)
    found_rows = yield Step(sql.hits(len(top)), tuple(score))
    hits = [{**_row(r), "score": score[int(r["id"])]} for r in found_rows]
    return sorted(hits, key=lambda h: (-h["score"], int(h["id"])))


def _read(
    lists: Sequence[tuple[int, int]], factors: dict[int, float], tables: int
) -> tuple[Any, ...]:
    """The parameters of `IndexSql._read` for word ids and how many passages hold each
    (`lists`), each word's weights times its factor: all its passages when few hold it
    (`WHOLE`), else its `BEST`, from each of the `tables` postings tables."""
    return tuple(
        x
        for word_id, held in lists
        for x in (factors[word_id], word_id, held if held <= WHOLE else BEST) * tables
    )


def _row(row: Row) -> dict[str, Any]:
    names = ("id", "collection_id", "document_id", "page", "number", "text", "title", "name")
    return {name: row[name] for name in names}
