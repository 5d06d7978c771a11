"""What one model call cost, read off its result once the same way for every reader (the run's
accountant, the stop gate's after-stop figures, the metrics and traces, the call policy)."""

from __future__ import annotations

from dataclasses import dataclass

from langchain_core.messages import AIMessage
from langchain_core.messages.ai import UsageMetadata, add_usage
from langchain_core.outputs import ChatGeneration, ChatResult, LLMResult

from calls.cache import CACHE_HIT


@dataclass(frozen=True, slots=True)
class CallCost:
    """`usage` is the replies' token usage summed (None when none reported it); a cache hit
    cost nothing at the provider, whatever usage its stored reply carries."""

    cache_hit: bool
    usage: UsageMetadata | None

    @property
    def input_tokens(self) -> int:
        return 0 if self.cache_hit or self.usage is None else int(self.usage["input_tokens"])

    @property
    def output_tokens(self) -> int:
        return 0 if self.cache_hit or self.usage is None else int(self.usage["output_tokens"])

    @property
    def total_tokens(self) -> int:
        return 0 if self.cache_hit or self.usage is None else int(self.usage["total_tokens"])


def call_cost(result: LLMResult | ChatResult) -> CallCost:
    """The cost of a model call from its result (Gemini counts thinking tokens inside output)."""
    if isinstance(result, LLMResult):
        generations = [g for gens in result.generations for g in gens]
    else:
        generations = list(result.generations)
    hit = any((g.generation_info or {}).get(CACHE_HIT) for g in generations)
    total: UsageMetadata | None = None
    for generation in generations:
        message = generation.message if isinstance(generation, ChatGeneration) else None
        usage = message.usage_metadata if isinstance(message, AIMessage) else None
        if usage:
            total = usage if total is None else add_usage(total, usage)
    return CallCost(cache_hit=hit, usage=total)
