"""Process-wide call observers: how metrics and traces see model and tool calls without the
call machinery knowing them.

An observer may ride along every model and tool call as a LangChain callback handler, and hears
the figures only the call policy knows (`rate_limit_changed`, `model_retry`). The service
installs its observers once at start-up (`agents.observers.add`, which adds them here too); with
none installed a call pays nothing.
"""

from __future__ import annotations

from contextvars import ContextVar
from typing import Protocol

from langchain_core.callbacks import AsyncCallbackHandler, BaseCallbackHandler

from calls.settings import Role


class CallObserver(Protocol):
    def handler(self, run_id: str, node_id: str | None, role: Role) -> BaseCallbackHandler | None:
        """A callback handler for one model/agent call of a run, or None."""

    def on_rate_limit(self, model: str, value: float) -> None:
        """The adaptive rate limit for `model` is now `value` requests per second."""

    def on_retry(self, role: Role, model: str, reason: str) -> None:
        """A model call is retried; `reason` is e.g. "429", "5xx", "timeout"."""


class CallHandler(AsyncCallbackHandler):
    """Base of the handlers that ride along a run's model and tool calls (the run's call
    tracker, the observers' watchers): they run inline, in order, in the caller's task (else
    LangChain wraps every event for every handler in a task of its own), and the chain,
    retriever, retry and custom events they have no use for are not even dispatched to them."""

    run_inline = True

    @property
    def ignore_chain(self) -> bool:
        return True

    @property
    def ignore_retriever(self) -> bool:
        return True

    @property
    def ignore_retry(self) -> bool:
        return True

    @property
    def ignore_custom_event(self) -> bool:
        return True


_observers: list[CallObserver] = []
# The run and node whose call the current task is making (jobs run in their own contexts).
_call_ids: ContextVar[tuple[str, str | None] | None] = ContextVar("plantree_ids", default=None)


def bind_ids(run_id: str, node_id: str | None) -> None:
    """Mark the current task as working for `run_id`/`node_id` (for log records)."""
    _call_ids.set((run_id, node_id))


def current_ids() -> tuple[str, str | None] | None:
    """The run and node the current task works for, if any."""
    return _call_ids.get()


def add(observer: CallObserver) -> None:
    """Install an observer for every call of this process (once; a second add is a no-op)."""
    if not any(o is observer for o in _observers):
        _observers.append(observer)


def remove(observer: CallObserver) -> None:
    _observers[:] = [o for o in _observers if o is not observer]


def handlers(run_id: str, node_id: str | None, role: Role) -> list[BaseCallbackHandler]:
    """The observers' callback handlers for one call."""
    found = (o.handler(run_id, node_id, role) for o in list(_observers))
    return [h for h in found if h is not None]


def rate_limit_changed(model: str, value: float) -> None:
    """For the call policy: the adaptive limit of `model` moved to `value` requests/s."""
    for observer in list(_observers):
        observer.on_rate_limit(model, value)


def model_retry(role: Role, model: str, reason: str) -> None:
    """For the call policy: a model call of `role` is being retried for `reason`."""
    for observer in list(_observers):
        observer.on_retry(role, model, reason)
