"""Run accounting: counts calls and tokens, enforces budgets before each model attempt, and
records tool calls. A `CallTracker` hears every model and tool call of a job from the call's
`CallObserver` (`calls.observers`), as its owner; the call policy (`calls.policy`) reports each
attempt to it, retries included."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any
from uuid import UUID

from langchain_core.messages import ToolMessage
from langchain_core.messages.ai import UsageMetadata

from agents.events import EventSink, ToolCalled
from agents.grounding.evidence import NewEvidence
from agents.params import RunParams
from agents.state import Source, ToolCallRecord
from calls.attempts import AttemptEnd, AttemptHook
from calls.errors import BudgetExhausted, BudgetReason
from calls.readings import CallSubscriber, ModelCall, ModelReading, ToolReading
from calls.settings import Role

# Model calls kept back for the end of a run: the vote (or a best-effort answer).
FINISH_RESERVE_CALLS = 1


class Accountant:
    """Counts one run's model calls, tokens and tool calls, and says no before a budget breaks.

    During the search the last `FINISH_RESERVE_CALLS` calls are held back so the vote can run.
    """

    def __init__(self, params: RunParams, prior: dict[str, Any] | None = None) -> None:
        self.params = params
        prior = prior or {}
        self.calls: Counter[str] = Counter(prior.get("llm_calls_by_role", {}))
        self.input_tokens: int = int(prior.get("input_tokens", 0))
        self.output_tokens: int = int(prior.get("output_tokens", 0))
        self.tool_calls: int = int(prior.get("tool_calls", 0))
        self.tool_errors: int = int(prior.get("tool_errors", 0))
        self.cache_hits: int = int(prior.get("cache_hits", 0))
        self.candidates_scored: int = int(prior.get("candidates_scored", 0))
        self.rate_limited: int = int(prior.get("rate_limited", 0))
        self.model_rate: float | None = prior.get("model_rate")
        self.reserved_tokens = 0  # estimates of the attempts in flight
        self.finishing = False

    @property
    def total_calls(self) -> int:
        return sum(self.calls.values())

    @property
    def total_tokens(self) -> int:
        return self.input_tokens + self.output_tokens

    def exhausted(self) -> BudgetReason | None:
        """The stop reason if the next model call would break a budget, else None."""
        reserve = 0 if self.finishing else FINISH_RESERVE_CALLS
        if self.total_calls >= self.params.max_llm_calls - reserve:
            return "budget_llm_calls"
        if self.total_tokens + self.reserved_tokens >= self.params.max_tokens:
            return "budget_tokens"
        return None

    def before_call(self, role: Role) -> None:
        """Count a model call about to start, or raise `BudgetExhausted` instead."""
        reason = self.exhausted()
        if reason is not None:
            raise BudgetExhausted(reason)
        self.calls[role] += 1

    def reserve(self, tokens: int) -> None:
        """Hold `tokens` of the token budget for an attempt in flight."""
        self.reserved_tokens += tokens

    def settle(self, tokens: int, usage: UsageMetadata | None) -> None:
        """Release an attempt's reservation and add what it really used."""
        self.reserved_tokens = max(0, self.reserved_tokens - tokens)
        if usage:
            self.add_tokens(int(usage.get("input_tokens", 0)), int(usage.get("output_tokens", 0)))

    def add_tokens(self, input_tokens: int, output_tokens: int) -> None:
        """Add tokens a call used."""
        self.input_tokens += input_tokens
        self.output_tokens += output_tokens

    def uncount(self, role: Role) -> None:
        """An attempt counted by `before_call` was not billed (the provider answered 429)."""
        self.calls[role] -= 1
        if self.calls[role] <= 0:
            del self.calls[role]

    def count_hit(self, role: Role) -> None:
        """A call counted by `before_call` was served from the cache: not a model call."""
        self.calls[role] -= 1
        if self.calls[role] <= 0:
            del self.calls[role]
        self.cache_hits += 1

    def snapshot(self) -> dict[str, Any]:
        """The counters as plain data (saved in the graph state, sent in events)."""
        return {
            "llm_calls": self.total_calls,
            "llm_calls_by_role": dict(sorted(self.calls.items())),
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "tool_calls": self.tool_calls,
            "tool_errors": self.tool_errors,
            "cache_hits": self.cache_hits,
            "evaluations": self.calls.get("evaluator", 0),
            "candidates_scored": self.candidates_scored,
            # Attempts the provider refused with 429 (not billed, not counted as calls), and
            # the model rate allowed after this run's last call (None: no limit in force).
            "rate_limited": self.rate_limited,
            "model_rate": None if self.model_rate is None else round(self.model_rate, 3),
            # The same tree with one evaluator call per candidate and no cache.
            "naive_calls": self.total_calls + self.cache_hits + self.candidates_scored,
        }


@dataclass(kw_only=True, eq=False)
class CallTracker(CallSubscriber, AttemptHook):
    """The run's own subscriber to the calls of one job, told last by the call's
    `CallObserver`: budget check and count before each model attempt, usage after it, and a
    record plus a `tool_call` event for every tool call. What it raises stops the call.

    A call's first attempt is counted when the call starts (so concurrent calls can never pass
    the call budget); the call policy then reports every attempt: its retries count as calls
    too, a 429 is given back. A model outside the call policy (never reports attempts) is
    counted once per call, with the usage of its reply.
    """

    accountant: Accountant
    role: Role
    run_id: str
    node_id: str | None
    emit: EventSink
    tool_records: list[ToolCallRecord] = field(default_factory=list, init=False)
    sources: list[Source] = field(default_factory=list, init=False)
    evidence: list[NewEvidence] = field(default_factory=list, init=False)
    # Calls whose first attempt is counted already, and calls the policy reported attempts for.
    _counted: set[UUID] = field(default_factory=set, init=False, repr=False)
    _metered: set[UUID] = field(default_factory=set, init=False, repr=False)

    # model calls ------------------------------------------------------------------------------

    async def model_started(self, call: ModelCall) -> None:
        self.accountant.before_call(self.role)
        self._counted.add(call.key)

    def begin_attempt(self, call_id: UUID | None, estimate_tokens: int) -> None:
        if call_id is not None:
            self._metered.add(call_id)
        if call_id is not None and call_id in self._counted:
            self._counted.discard(call_id)  # counted at the call's start
        else:
            self.accountant.before_call(self.role)
        self.accountant.reserve(estimate_tokens)

    def end_attempt(self, attempt: AttemptEnd) -> None:
        self.accountant.settle(attempt.estimate_tokens, attempt.usage)
        if attempt.rate_limited:
            self.accountant.rate_limited += 1
            self.accountant.uncount(self.role)
        if attempt.limiter is not None:
            self.accountant.model_rate = attempt.limiter.rate

    def add_usage(self, usage: UsageMetadata) -> None:
        self.accountant.settle(0, usage)

    async def model_ended(self, reading: ModelReading) -> None:
        key = reading.call.key
        self._counted.discard(key)
        if key in self._metered:
            self._metered.discard(key)
            return  # the call policy has settled every attempt
        if reading.error is not None:
            return
        if reading.cache_hit:
            self.accountant.count_hit(self.role)
            return
        self.accountant.add_tokens(reading.input_tokens, reading.output_tokens)

    # tool calls -------------------------------------------------------------------------------

    async def tool_ended(self, reading: ToolReading) -> None:
        output = reading.output
        if isinstance(output, ToolMessage):
            artifact = output.artifact if isinstance(output.artifact, dict) else {}
            for source in artifact.get("sources", []) or []:
                if isinstance(source, dict) and source.get("url"):
                    self.sources.append(
                        Source(title=str(source.get("title") or source["url"]), url=source["url"])
                    )
            # A call that worked but found nothing to cite (its artifact names the kind of
            # emptiness: no results, a list of options to choose from) is no evidence: its
            # text is the tool's own notice, which a quote could match but nothing backs.
            if reading.ok and reading.error_kind is None and not artifact.get("error_kind"):
                self._keep_evidence(reading.call.name, output, artifact)
        call = reading.call
        seconds = round(reading.seconds, 4)
        self.accountant.tool_calls += 1
        if not reading.ok:
            self.accountant.tool_errors += 1
        record = ToolCallRecord(
            name=call.name,
            args=call.args,
            ok=reading.ok,
            error_kind=reading.error_kind,
            seconds=seconds,
        )
        self.tool_records.append(record)
        if self.node_id is not None:
            await self.emit(ToolCalled(run_id=self.run_id, node_id=self.node_id, **record))

    def _keep_evidence(self, name: str, output: ToolMessage, artifact: dict[str, Any]) -> None:
        """Every passage a tool call showed the model becomes evidence of this step: the
        artifact's `passages` (each exactly as the content shows it), or for a tool that lists
        none (an MCP server's, say) its whole text as one passage."""
        if self.node_id is None:
            return
        passages = artifact.get("passages")
        if isinstance(passages, list) and passages:
            for passage in passages:
                if isinstance(passage, dict) and passage.get("text"):
                    self.evidence.append(
                        NewEvidence(
                            node_id=self.node_id,
                            tool=name,
                            title=str(passage.get("title") or ""),
                            text=str(passage["text"]),
                            url=str(passage.get("url") or ""),
                            path=str(passage.get("doc_id") or ""),
                            sentences=list(passage.get("sentences") or []),
                        )
                    )
            return
        text = output.text.strip()
        if text:
            sources = artifact.get("sources") or []
            first = sources[0] if sources and isinstance(sources[0], dict) else {}
            self.evidence.append(
                NewEvidence(
                    node_id=self.node_id,
                    tool=name,
                    title=str(first.get("title") or name),
                    text=text,
                    url=str(first.get("url") or ""),
                )
            )
