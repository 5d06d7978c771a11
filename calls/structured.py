"""Structured model output with one corrective retry: the model sees why its reply failed."""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from langchain_core.runnables import Runnable, RunnableConfig
from pydantic import BaseModel, ValidationError

from calls.decoding import for_attempt
from calls.errors import BudgetExhausted, ModelError
from calls.memo import IdentityMemo

logger = logging.getLogger(__name__)

T = TypeVar("T")

# Structured-output runnables per (model, schema): providers build the schema's JSON, a bound
# copy of the model and a parser on every `with_structured_output`, and none of it depends on
# the call. Role models are shared by the process's runs (agents/context.py), so each is
# built once per process.
_RUNNABLES: IdentityMemo[Runnable[Any, Any]] = IdentityMemo(64)


def _schema_key(schema: type[BaseModel] | dict[str, Any]) -> object:
    return schema if isinstance(schema, type) else json.dumps(schema, sort_keys=True)


def structured(
    model: BaseChatModel, schema: type[BaseModel] | dict[str, Any]
) -> Runnable[Any, Any]:
    """`model.with_structured_output(schema, method="json_schema", include_raw=True)`, made
    once per model and schema."""
    return _RUNNABLES.get(
        (model,),
        _schema_key(schema),
        lambda: model.with_structured_output(schema, method="json_schema", include_raw=True),
    )


def _describe(error: BaseException) -> str:
    if isinstance(error, ValidationError):
        parts = [f"{'.'.join(map(str, e['loc'])) or 'value'}: {e['msg']}" for e in error.errors()]
        return "; ".join(parts)[:500]
    return str(error)[:500] or type(error).__name__


async def call_structured(
    model: BaseChatModel,
    schema: type[BaseModel] | dict[str, Any],
    messages: Sequence[BaseMessage],
    *,
    config: RunnableConfig,
    parse: Callable[[Any], T],
    what: str,
) -> T:
    """Ask `model` for output matching `schema` and turn it into `T` with `parse`.

    `parse` raises `ValueError` (or `ValidationError`) for output that parses but is unusable.
    A reply that fails is retried once with the failure shown to the model (with a seed of its
    own, `calls.decoding.for_attempt`); a second failure, or a model call that fails (the model
    layer has already retried what was worth it), raises `ModelError`.
    """
    runnable = structured(model, schema)
    history: list[BaseMessage] = list(messages)
    problem = "no reply"
    for attempt in (1, 2):
        try:
            out = await runnable.ainvoke(history, config=for_attempt(config, attempt))
        except (BudgetExhausted, ModelError):
            raise
        except Exception as e:
            raise ModelError(f"the {what} model call failed ({type(e).__name__})") from e
        assert isinstance(out, dict)  # include_raw=True always returns a dict
        raw = out.get("raw")
        try:
            if out.get("parsing_error") is not None:
                raise ValueError(_describe(out["parsing_error"]))
            if out.get("parsed") is None:
                raise ValueError("the reply did not contain the requested JSON object")
            return parse(out["parsed"])
        except (ValueError, ValidationError) as e:
            problem = _describe(e)
            logger.warning("%s output unusable (attempt %d): %s", what, attempt, problem)
            if isinstance(raw, AIMessage):
                history.append(AIMessage(content=raw.text or "(empty)"))
            history.append(
                HumanMessage(
                    content=(
                        f"Your reply could not be used: {problem}. "
                        "Reply again with only a JSON object that matches the schema."
                    )
                )
            )
    raise ModelError(f"the {what} reply was unusable twice: {problem}")
