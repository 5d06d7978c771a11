"""Citation checking with no model in it: which of an answer's citations quote the evidence item
they name, and how much of the answer they cover.

The responder replies with a `CitedAnswer`: an answer with markers `[1]`, `[2]`, ... and, for
each marker, citations naming an evidence item (agents/grounding/evidence.py) and a quote from it.
`verify_answer` keeps a citation only when its quote is found in that item's text, by these
rules, applied in this order to each citation:

0. A one-sentence answer written without any marker (a short answer: a name, a date) carries
   its citations' markers at its end (`with_markers`); every other answer is taken as written.
1. `marker_not_in_answer`: the answer has no `[n]` for the citation's marker.
2. `duplicate`: an earlier citation has the same marker and evidence id (the first is judged).
3. `unknown_evidence`: no item has the id. An id is looked up as given, then without brackets
   and spaces, upper-cased ("[e3]" names E3).
4. `quote_too_short`: the normalised quote has fewer than 3 tokens (one word verifies
   nothing), unless it equals the item's whole normalised text.
5. A match, tried in order, only against the named item (a quote found verbatim in another
   item is still `quote_not_found`):
   - "exact": the quote, whitespace collapsed, is in the text, whitespace collapsed;
   - "normalised": the normalised quote is in the normalised text. Normalising applies NFKC,
     casefolds, maps typographic quotes and dashes to ASCII, drops invisible format characters,
     turns punctuation into spaces and collapses whitespace;
   - "fuzzy": at least 90 % of the quote's tokens occur in order inside one window of the
     text's tokens no longer than 1.25 times the quote's token count, and the window holds
     the same tokens with digits and the same negations as the quote, as often (a changed
     year, or an added or dropped "not", changes what a quote says);
   - otherwise `quote_not_found`.
   Exact and normalised matches start and end on word boundaries of the text. A match reports
   the character range it covers in the item's original text and the sentences it overlaps.

Markers without a verified citation are removed from the answer; surviving markers keep their
numbers. The answer is split into sentences (agents/grounding/sentences.py); a sentence is supported
when one of its markers has a verified citation, and groundedness is the share of supported
sentences (0.0 for an answer without sentences).

`path_complete_supported` is the rule for accepting a replanner's "complete" while planned
steps remain: a draft grounded enough, or evidence that names every entity of the question.

Only the quote, the named item's text and the answer's markers decide: text in the evidence or
the answer that claims to be verified, forged item headers, or JSON inside a passage have no
effect, and nothing the model sends can mark a citation verified.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Literal

from pydantic import BaseModel, Field
from typing_extensions import TypedDict

from agents.grounding.evidence import Evidence, EvidenceSource, sentence_ids_for
from agents.grounding.quotes import Folded, MatchKind, find_quote, fold
from agents.grounding.sentences import MARKER, split_sentences

RejectReason = Literal[
    "unknown_evidence", "quote_not_found", "quote_too_short", "marker_not_in_answer", "duplicate"
]

MIN_QUOTE_TOKENS = 3
GROUNDED_THRESHOLD = 0.5

# A marker that loses its citation takes the spaces before it along, unless another marker
# follows directly ("x [1][2]" without 1 reads "x [2]").
_SPACED_MARKER = re.compile(r"([ \t]*)\[(\d{1,6})\]")


class CitationClaim(BaseModel):
    """One citation as the responder gives it: nothing in it is trusted until checked."""

    marker: int = Field(ge=1, le=999_999, description="The n of the marker [n] it backs.")
    evidence_id: str = Field(description="The id of the evidence item quoted, e.g. E3.")
    quote: str = Field(
        description="Words copied verbatim from that evidence item (at least three words)."
    )


class CitedAnswer(BaseModel):
    """The responder's structured reply."""

    answer: str = Field(description="The answer, with a marker [n] after each claim it backs.")
    citations: list[CitationClaim] = Field(
        default_factory=list, description="For each marker, the evidence it quotes."
    )


class Citation(TypedDict):
    marker: int
    evidence_id: str
    source: EvidenceSource
    quote: str
    verified: Literal[True]
    match: MatchKind
    start: int
    end: int
    node_id: str
    sent_ids: list[int]


class Rejection(TypedDict):
    marker: int
    evidence_id: str
    quote: str
    reason: RejectReason


class AnswerSentence(TypedDict):
    text: str
    markers: list[int]
    supported: bool


class VerifiedAnswer(TypedDict):
    answer: str
    citations: list[Citation]
    rejected: list[Rejection]
    unsupported: list[str]
    groundedness: float
    sentences: list[AnswerSentence]


class Grounding(TypedDict):
    """What the verifier found of one answer, kept beside it: the citations that hold, the
    ones that did not, the sentences left without one, and the share of supported sentences."""

    citations: list[Citation]
    rejected: list[Rejection]
    unsupported: list[str]
    groundedness: float


class GroundingFields(BaseModel):
    """What a reader of a finished run is told of its answer's grounding (the `done` event and
    the run's result carry the same fields)."""

    citations: list[Citation] = Field(
        default_factory=list,
        description="The answer's citations whose quote was found in the evidence they name.",
    )
    groundedness: float | None = Field(
        default=None, description="Share of the answer's sentences with a verified citation."
    )
    unsupported: list[str] = Field(
        default_factory=list, description="Sentences of the answer with no verified citation."
    )
    rejected: list[Rejection] = Field(
        default_factory=list, description="Citations removed: their quote did not hold."
    )


def grounding_of(verified: VerifiedAnswer) -> Grounding:
    return Grounding(
        citations=verified["citations"],
        rejected=verified["rejected"],
        unsupported=verified["unsupported"],
        groundedness=verified["groundedness"],
    )


def with_markers(cited: CitedAnswer) -> CitedAnswer:
    """A one-sentence answer written without any marker (a short answer: a name, a date)
    carries its citations' markers at its end; any other answer is taken as written."""
    if (
        not cited.citations
        or MARKER.search(cited.answer)
        or len(split_sentences(cited.answer)) != 1
    ):
        return cited
    markers = "".join(f"[{m}]" for m in dict.fromkeys(c.marker for c in cited.citations))
    return cited.model_copy(update={"answer": cited.answer.rstrip() + markers})


def verify_answer(cited: CitedAnswer, evidence: Mapping[str, Evidence]) -> VerifiedAnswer:
    """Check every citation of `cited` against `evidence` by the rules above."""
    cited = with_markers(cited)
    present = {int(match.group(1)) for match in MARKER.finditer(cited.answer)}
    seen: set[tuple[int, str]] = set()
    folds: dict[str, tuple[Folded, Folded]] = {}
    citations: list[Citation] = []
    rejected: list[Rejection] = []
    for claim in cited.citations:
        item_id = _resolve(claim.evidence_id, evidence)
        key = (claim.marker, item_id or claim.evidence_id)
        verdict: Citation | RejectReason
        if claim.marker not in present:
            verdict = "marker_not_in_answer"
        elif key in seen:
            verdict = "duplicate"
        elif item_id is None:
            verdict = "unknown_evidence"
        else:
            verdict = _judge(claim, evidence[item_id], folds)
        seen.add(key)
        if isinstance(verdict, str):
            rejected.append(
                Rejection(
                    marker=claim.marker,
                    evidence_id=claim.evidence_id,
                    quote=claim.quote,
                    reason=verdict,
                )
            )
        else:
            citations.append(verdict)
    verified = {citation["marker"] for citation in citations}
    answer = _keep_markers(cited.answer, verified)
    sentences = [
        AnswerSentence(text=text, markers=markers, supported=any(m in verified for m in markers))
        for text in split_sentences(answer)
        for markers in [list(dict.fromkeys(int(m.group(1)) for m in MARKER.finditer(text)))]
    ]
    supported = sum(sentence["supported"] for sentence in sentences)
    return VerifiedAnswer(
        answer=answer,
        citations=citations,
        rejected=rejected,
        unsupported=[sentence["text"] for sentence in sentences if not sentence["supported"]],
        groundedness=supported / len(sentences) if sentences else 0.0,
        sentences=sentences,
    )


def path_complete_supported(
    question: str,
    evidence: Mapping[str, Evidence],
    draft: VerifiedAnswer | None,
    threshold: float = GROUNDED_THRESHOLD,
) -> bool:
    """Whether a replanner's "complete" may end a path whose plan still has steps.

    True when a draft answer exists with groundedness of at least `threshold`, or when the
    question names entities (capitalised word sequences and quoted strings, not counting a
    sentence's first word or question words) and each one occurs, normalised and on word
    boundaries, in the text of at least one evidence item. A question that names no entity
    gets no support from the second rule.
    """
    if draft is not None and draft["groundedness"] >= threshold:
        return True
    entities = [fold(entity, full=True).text for entity in question_entities(question)]
    entities = [entity for entity in entities if entity]
    if not entities or not evidence:
        return False
    texts = [f" {fold(item['text'], full=True).text} " for item in evidence.values()]
    return all(any(f" {entity} " in text for text in texts) for entity in entities)


def _judge(
    claim: CitationClaim, item: Evidence, folds: dict[str, tuple[Folded, Folded]]
) -> Citation | RejectReason:
    """Rules 4 and 5 for a claim on the item it names; `folds` keeps each item's folded text
    for the next claim on it."""
    if item["id"] not in folds:
        folds[item["id"]] = (fold(item["text"], full=False), fold(item["text"], full=True))
    exact, normal = folds[item["id"]]
    quote = fold(claim.quote, full=True).text
    if len(quote.split()) < MIN_QUOTE_TOKENS and (not quote or quote != normal.text):
        return "quote_too_short"
    found = find_quote(claim.quote, exact, normal)
    if found is None:
        return "quote_not_found"
    kind, start, end = found
    return Citation(
        marker=claim.marker,
        evidence_id=item["id"],
        source=EvidenceSource(**item["source"]),
        quote=claim.quote,
        verified=True,
        match=kind,
        start=start,
        end=end,
        node_id=item["node_id"],
        sent_ids=sentence_ids_for(item, start, end),
    )


def _resolve(evidence_id: str, evidence: Mapping[str, Evidence]) -> str | None:
    if evidence_id in evidence:
        return evidence_id
    canonical = "".join(evidence_id.split()).strip("[]").upper()
    return canonical if canonical in evidence else None


def _keep_markers(answer: str, keep: set[int]) -> str:
    def replace(match: re.Match[str]) -> str:
        if int(match.group(2)) in keep:
            return match.group(0)
        return match.group(1) if answer.startswith("[", match.end()) else ""

    return _SPACED_MARKER.sub(replace, answer)


_QUESTION_WORDS = frozenset(
    # A word list reads best as one string.
    "what who whom whose which when where why how whether is are was were "  # noqa: SIM905
    "do does did can could should would will shall may might has have had name list i".split()
)
_QUOTED = re.compile(r"\"([^\"]+)\"|\u201c([^\u201d]+)\u201d")
_QUESTION_WORD = re.compile(r"[^\W_][\w'\u2019-]*")
_POSSESSIVE = re.compile(r"['\u2019]s?$")


def question_entities(question: str) -> list[str]:
    """The named entities of a question, in order, without repeats: quoted strings, then runs
    of capitalised words next to each other. A sentence's first word and question words are
    not part of a run ("Barack Obama was born where?" names "Obama")."""
    entities = [a or b for a, b in _QUOTED.findall(question)]
    for sentence in split_sentences(_QUOTED.sub(" , ", question)):
        run: list[str] = []
        end = 0
        for index, match in enumerate(_QUESTION_WORD.finditer(sentence)):
            word = _POSSESSIVE.sub("", match.group())
            named = index > 0 and word[:1].isupper() and word.casefold() not in _QUESTION_WORDS
            if run and (not named or sentence[end : match.start()].strip()):
                entities.append(" ".join(run))
                run = []
            if named:
                run.append(word)
            end = match.end()
        if run:
            entities.append(" ".join(run))
    return list(dict.fromkeys(entity.strip() for entity in entities if entity.strip()))
