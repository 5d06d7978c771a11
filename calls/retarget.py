"""Re-pointing a provider's runnables at the call policy: `bind_tools` and
`with_structured_output` are built by the provider model, so its own wire format is kept, and
then every use of that model inside them is replaced by its policy wrapper."""

from __future__ import annotations

from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.runnables import Runnable
from pydantic import BaseModel

from calls.errors import ConfigError


def retarget(runnable: Runnable[Any, Any], wrapper: Any) -> Runnable[Any, Any]:
    """`runnable` (built by `wrapper.inner`) with every use of `wrapper.inner` replaced by
    `wrapper`, and every configured copy of it (a model whose `bind_tools` returns a copy of
    itself) put behind the same policy; raises if there was none, so a provider that builds its
    runnables another way fails loudly instead of silently skipping the call policy."""
    replaced = 0

    def walk(value: Any) -> Any:
        nonlocal replaced
        if value is wrapper.inner:
            replaced += 1
            return wrapper
        if isinstance(value, BaseChatModel) and type(value) is type(wrapper.inner):
            replaced += 1
            return wrapper.model_copy(update={"inner": value})
        if isinstance(value, list | tuple):
            items = [walk(v) for v in value]
            return value if all(a is b for a, b in zip(items, value, strict=True)) else items
        if isinstance(value, dict):
            mapped = {k: walk(v) for k, v in value.items()}
            return value if all(mapped[k] is value[k] for k in value) else mapped
        if isinstance(value, Runnable) and isinstance(value, BaseModel):
            updates = {}
            for name in type(value).model_fields:
                current = getattr(value, name, None)
                new = walk(current)
                if new is not current:
                    updates[name] = new
            return value.model_copy(update=updates) if updates else value
        return value

    out = walk(runnable)
    if not replaced:
        raise ConfigError(
            f"cannot apply the call policy to {type(wrapper.inner).__name__}: its runnable "
            "does not call the model it came from"
        )
    result: Runnable[Any, Any] = out
    return result
