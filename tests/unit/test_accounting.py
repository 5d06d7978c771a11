"""Budget arithmetic: refusal before the call, the finish reserve, usage and restore."""

from __future__ import annotations

import pytest
from langchain_core.messages import AIMessage

from agents.accounting import Accountant
from agents.params import RunParams
from calls.errors import BudgetExhausted


def test_calls_are_refused_before_the_limit_minus_the_finish_reserve() -> None:
    acct = Accountant(RunParams(max_llm_calls=3))
    acct.before_call("planner")
    acct.before_call("executor")

    with pytest.raises(BudgetExhausted) as info:
        acct.before_call("executor")

    assert info.value.reason == "budget_llm_calls"
    assert acct.total_calls == 2


def test_the_finish_phase_may_use_the_reserved_call_and_no_more() -> None:
    acct = Accountant(RunParams(max_llm_calls=3))
    acct.before_call("planner")
    acct.before_call("executor")
    acct.finishing = True

    acct.before_call("voter")

    with pytest.raises(BudgetExhausted):
        acct.before_call("voter")
    assert acct.calls["voter"] == 1


def test_tokens_count_input_and_output_and_stop_further_calls() -> None:
    acct = Accountant(RunParams(max_tokens=1000))
    acct.settle(0, {"input_tokens": 900, "output_tokens": 150, "total_tokens": 1050})

    assert acct.total_tokens == 1050
    assert acct.exhausted() == "budget_tokens"


def test_a_snapshot_restores_into_a_new_accountant() -> None:
    acct = Accountant(RunParams())
    acct.before_call("planner")
    acct.before_call("executor")
    acct.tool_calls, acct.tool_errors = 3, 1

    again = Accountant(RunParams(), acct.snapshot())

    assert again.snapshot() == acct.snapshot()
    assert again.snapshot()["llm_calls_by_role"] == {"executor": 1, "planner": 1}


def test_a_call_s_cost_sums_its_replies_usage_and_a_cache_hit_costs_nothing() -> None:
    from langchain_core.outputs import ChatGeneration, LLMResult

    from calls.cache import CACHE_HIT
    from calls.usage import call_cost

    def reply(tokens: int, hit: bool = False) -> ChatGeneration:
        usage = {"input_tokens": tokens, "output_tokens": 1, "total_tokens": tokens + 1}
        message = AIMessage(content="x", usage_metadata=usage)  # type: ignore[arg-type]
        return ChatGeneration(message=message, generation_info={CACHE_HIT: True} if hit else None)

    paid = call_cost(LLMResult(generations=[[reply(10), reply(5)]]))
    free = call_cost(LLMResult(generations=[[reply(10, hit=True)]]))

    assert (paid.cache_hit, paid.input_tokens, paid.output_tokens, paid.total_tokens) == (
        False,
        15,
        2,
        17,
    )
    assert (free.cache_hit, free.input_tokens, free.total_tokens) == (True, 0, 0)
