"""A scripted reader for multi-hop questions: every role of a run, answering from the corpus
tool's results without knowing the gold answer.

The plan is one search step; its executor searches the corpus for the question's own words
and reports the title of the passage ranked first, and the responder answers with that title,
citing the first words of that passage's first sentence as the evidence it was shown (E1).
A floor to set real models beside (it can only be right when the answer is a paragraph's
title), and a way to run the multi-hop benchmark end to end without a provider.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from langchain_core.messages import AIMessage

from testkit.fakes import FakeCall, Reply, tool_call

STEP = "Search the documents for the question"
_FIRST_HIT = re.compile(r"^\[1\] (.+)$", re.MULTILINE)
_FOUND = re.compile(r"^Top passage: (.+)$", re.MULTILINE)
_FIRST_ITEM = re.compile(r"^\[E1\] [^\n]*\n([^\n]+)", re.MULTILINE)
QUOTE_WORDS = 8
NOTHING = "nothing found"

# A question in the shared JSON Lines format whose answer is its first paragraph's title, so
# the reader answers it right, citing that paragraph's first sentence (a supporting fact).
TITLE_QUESTION: dict[str, Any] = {
    "id": "t1",
    "question": "Who wrote the novel Lanterns?",
    "answer": "Ann Smith",
    "type": "bridge",
    "level": "hard",
    "supporting_facts": [["Ann Smith", 0]],
    "context": [
        ["Ann Smith", ["Ann Smith wrote the novel Lanterns.", " She lives in Leeds."]],
        ["Leeds", ["Leeds is a city."]],
    ],
}


@dataclass(frozen=True)
class MultihopReader:
    """The script of `FakeModels` for one question, `tool` being the corpus tool's name."""

    question: str
    tool: str = "local_corpus"

    def __call__(self, call: FakeCall) -> Reply:
        if call.role == "planner":
            return {"steps": [STEP]}
        if call.role == "executor":
            return self.execute(call)
        if call.role == "replanner":
            return {"complete": True, "candidates": []}
        if call.role == "evaluator":
            return {"score": 0.5, "reason": "one search done"}
        if call.role == "responder":
            return self.respond(call)
        if call.role == "voter":
            return {"choice": call.enum[0], "reason": "first shown"}
        raise AssertionError(f"unexpected role {call.role}")

    def respond(self, call: FakeCall) -> Reply:
        found: list[str] = _FOUND.findall(call.prompt)
        if not found:
            return NOTHING
        item = _FIRST_ITEM.search(call.prompt)
        if item is None:
            return found[-1].strip()
        first_sentence = re.split(r"(?<=[.!?])\s", item.group(1).strip(), maxsplit=1)[0]
        quote = " ".join(first_sentence.split()[:QUOTE_WORDS])
        return {
            "answer": f"{found[-1].strip()} [1]",
            "citations": [{"marker": 1, "evidence_id": "E1", "quote": quote}],
        }

    def execute(self, call: FakeCall) -> Reply:
        results: list[Any] = [m for m in call.messages if m.type == "tool"]
        if not results:
            # The corpus tool the run offers (the pooled setting's is `documents`), else `tool`.
            tool = call.tools[0] if len(call.tools) == 1 else self.tool
            return tool_call(tool, {"query": self.question})
        first = _FIRST_HIT.search(results[-1].text)
        return AIMessage(content=f"Top passage: {first.group(1).strip() if first else NOTHING}")
