"""Small answered trees for the anytime search's pure rules."""

from __future__ import annotations

from agents.grounding.evidence import Evidence
from agents.grounding.verify import Citation, Grounding, Rejection
from agents.state import NodeRecord, new_node


def item(node_id: str, title: str, text: str) -> Evidence:
    return Evidence(
        id=f"{node_id}/1",
        node_id=node_id,
        tool="search",
        source={"id": title, "title": title, "url": ""},
        text=text,
        sentences=[],
    )


def cited(node_id: str, quote: str) -> Citation:
    return Citation(
        marker=1,
        evidence_id="E1",
        source={"id": "t", "title": "t", "url": ""},
        quote=quote,
        verified=True,
        match="exact",
        start=0,
        end=len(quote),
        node_id=node_id,
        sent_ids=[],
    )


def grounding(
    groundedness: float,
    citations: list[Citation] | None = None,
    unsupported: list[str] | None = None,
    rejected: int = 0,
) -> Grounding:
    return Grounding(
        citations=citations or [],
        rejected=[Rejection(marker=9, evidence_id="E9", quote="made up", reason="quote_not_found")]
        * rejected,
        unsupported=unsupported or [],
        groundedness=groundedness,
    )


def done(
    parent: NodeRecord | None,
    index: int,
    step: str,
    evidence: list[tuple[str, str]] = (),  # type: ignore[assignment]
    planned: list[str] | None = None,
) -> NodeRecord:
    """A done step that called a tool and found `evidence` ((title, text) pairs)."""
    node = new_node(parent=parent, index=index, step=step, planned=planned or [])
    node["status"] = "done"
    node["expanded"] = True
    node["tool_calls"] = [
        {"name": "search", "args": {"query": step}, "ok": True, "error_kind": None, "seconds": 0.1}
    ]
    node["evidence"] = [item(node["id"], title, text) for title, text in evidence]
    return node


def answered(node: NodeRecord, answer: str, found: Grounding) -> NodeRecord:
    node["complete"] = True
    node["answer"] = answer
    node["grounding"] = found
    return node
