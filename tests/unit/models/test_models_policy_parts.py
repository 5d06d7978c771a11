"""The call policy's pure parts: judging a failure, an attempt's outcome for the limiter, the
token estimate, and the one-chunk stream of a model that does not stream."""

from __future__ import annotations

from typing import Any

from langchain_core.exceptions import ModelRateLimitError
from langchain_core.language_models import BaseChatModel
from langchain_core.language_models.fake_chat_models import FakeListChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from langchain_core.messages.ai import UsageMetadata
from langchain_core.outputs import ChatGeneration, ChatResult

from calls.attempts import OUTPUT_TOKENS_ESTIMATE, estimate_tokens, judge
from calls.errors import ModelError
from calls.permits import attempt_outcome
from calls.streaming import one_chunk, streams


class HttpError(Exception):
    def __init__(self, code: int) -> None:
        super().__init__(f"HTTP {code}")
        self.code = code


def test_a_429_under_a_limiter_is_retried_without_using_up_the_retries() -> None:
    limited = judge(HttpError(429), limited=True)
    alone = judge(HttpError(429), limited=False)

    assert (limited.retry, limited.counted) == (True, False)
    assert (alone.retry, alone.counted) == (True, True)


def test_the_cores_errors_and_permanent_failures_are_not_retried() -> None:
    assert not judge(ModelError("no"), limited=False).retry
    assert not judge(HttpError(400), limited=False).retry
    assert judge(HttpError(503), limited=False).retry


def test_an_attempt_tells_the_limiter_ok_rate_limited_or_error() -> None:
    assert attempt_outcome(None) == ("ok", None)
    assert attempt_outcome(HttpError(503)) == ("error", None)
    assert attempt_outcome(ModelRateLimitError("slow down"))[0] == "rate_limited"


def test_the_estimate_is_a_quarter_of_the_prompt_plus_a_reply() -> None:
    messages = [HumanMessage("x" * 400)]

    assert estimate_tokens(messages) == 100 + 1 + OUTPUT_TOKENS_ESTIMATE


def test_a_whole_answer_is_one_chunk_with_its_usage() -> None:
    usage = UsageMetadata(input_tokens=3, output_tokens=2, total_tokens=5)
    message = AIMessage("hi", usage_metadata=usage)
    chunk = one_chunk(ChatResult(generations=[ChatGeneration(message=message)]))

    assert chunk.message.content == "hi"
    assert getattr(chunk.message, "usage_metadata", None) == usage


class Whole(BaseChatModel):
    """A model with no stream of its own."""

    @property
    def _llm_type(self) -> str:
        return "whole"

    def _generate(self, messages: list[BaseMessage], *args: Any, **kwargs: Any) -> ChatResult:
        return ChatResult(generations=[ChatGeneration(message=AIMessage("whole"))])


def test_only_a_model_with_a_stream_of_its_own_streams() -> None:
    assert streams(FakeListChatModel(responses=["a"]))
    assert not streams(Whole())
