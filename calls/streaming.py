"""The streaming path of a model call: a stream is opened (and retried) under the call policy
up to its first chunk, and read on from there without retries, each chunk under the timeout.

`streams` and `one_chunk` are pure.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessageChunk, BaseMessage
from langchain_core.messages.ai import UsageMetadata
from langchain_core.outputs import ChatGenerationChunk, ChatResult

from calls.errors import LatsError, ModelError

Opened = tuple[AsyncIterator[ChatGenerationChunk], ChatGenerationChunk]


def streams(model: BaseChatModel) -> bool:
    """Whether `model` streams at all (a model without its own stream answers in one go)."""
    kind = type(model)
    return kind._astream is not BaseChatModel._astream or kind._stream is not BaseChatModel._stream


def one_chunk(result: ChatResult) -> ChatGenerationChunk:
    """A whole answer as the one chunk of a stream."""
    message = result.generations[0].message
    return ChatGenerationChunk(
        message=AIMessageChunk(
            content=message.content,
            tool_calls=getattr(message, "tool_calls", []),
            usage_metadata=getattr(message, "usage_metadata", None),
        )
    )


def chunk_usage(chunk: ChatGenerationChunk) -> UsageMetadata | None:
    return getattr(chunk.message, "usage_metadata", None)


def first_usage(opened: Opened) -> UsageMetadata | None:
    """The usage an opened stream's first chunk reports."""
    return chunk_usage(opened[1])


async def open_stream(model: BaseChatModel, messages: list[BaseMessage], **kwargs: Any) -> Opened:
    """`model`'s stream and its first chunk. Retries are only safe before the first chunk has
    gone out, so this is what the policy retries."""
    stream = model._astream(messages, **kwargs)
    try:
        return stream, await anext(stream)
    except BaseException:
        await close(stream)
        raise


async def next_chunk(
    stream: AsyncIterator[ChatGenerationChunk],
    timeout_s: float,
    failure: Callable[[BaseException, int], ModelError],
) -> ChatGenerationChunk | None:
    """The stream's next chunk within `timeout_s`, or None at its end; a failure surfaces as
    `failure`'s `ModelError` (the core's own errors as they are)."""
    try:
        async with asyncio.timeout(timeout_s):
            return await anext(stream)
    except StopAsyncIteration:
        return None
    except LatsError:
        raise
    except Exception as e:
        raise failure(e, 1) from e


async def close(stream: AsyncIterator[Any]) -> None:
    """Close a provider's stream (and its HTTP response) that will not be read to the end."""
    aclose = getattr(stream, "aclose", None)
    if aclose is not None:
        await aclose()
