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
    acct.add_usage(
        AIMessage(
            content="x",
            usage_metadata={"input_tokens": 900, "output_tokens": 150, "total_tokens": 1050},
        )
    )

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
