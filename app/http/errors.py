"""Translation of the core's and the service's errors to HTTP responses. The only place that
knows both."""

from __future__ import annotations

import json
import logging
from http import HTTPStatus
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import ValidationError
from starlette.datastructures import MutableHeaders
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.types import Message, Receive, Scope, Send

from agents.errors import RunNotFound, StorageFull
from app.access.assistants import AssistantConflict
from app.access.limits import RateLimited
from app.access.run_access import RunNotFinished, ThreadNotFinished
from app.collections.errors import (
    DocumentNotFound,
    PageNotFound,
    UnsupportedMediaType,
    UploadRefused,
    UrlFailed,
    UrlRefused,
)
from app.errors import ServiceError
from app.http.asgi import HttpMiddleware
from app.runs.manager import RunEnded, RunNotWaiting, TooManyCommands
from app.runs.options import RunOptionRefused
from app.runs.queue import QueueFull
from app.store.base import StoreUnavailable
from app.store.collection_base import (
    CollectionInUse,
    CollectionNameTaken,
    CollectionNotFound,
    DocumentRefusedByStore,
    DocumentTooLarge,
    QuotaExceeded,
)
from calls.errors import LatsError
from tools.documents.reading import DocumentRefused

logger = logging.getLogger(__name__)

RETRY_AFTER_S = 5


class Unauthorized(ServiceError, code="unauthorized"):
    """No API key, or one the service does not know."""


# Collections and their documents: each refusal is the caller's to fix, so a 4xx (the more
# specific class first: DocumentTooLarge is a DocumentRefusedByStore).
_COLLECTION_STATUSES: tuple[tuple[type[ServiceError], int], ...] = (
    (CollectionNotFound, 404),
    (DocumentNotFound, 404),
    (PageNotFound, 404),
    (CollectionNameTaken, 409),
    (CollectionInUse, 409),
    (DocumentTooLarge, 413),
    (QuotaExceeded, 413),
    (UnsupportedMediaType, 415),
    (DocumentRefusedByStore, 422),
    (UploadRefused, 422),
    (UrlRefused, 422),
    (UrlFailed, 422),
)
_CODES = {400: "bad_request", 404: "not_found", 405: "method_not_allowed", 413: "too_large"}
_MESSAGE_MAX_CHARS = 300


def _body(code: str, message: str, **extra: object) -> dict[str, object]:
    return {"code": code, "message": message, **extra}


def _code(status: int) -> str:
    return _CODES.get(status, "http_error")


def invalid_fields(error: ValidationError | RequestValidationError) -> list[dict[str, Any]]:
    """Validation problems in the `fields` shape of a 422's body."""
    return [
        {"loc": list(e.get("loc", [])), "msg": e.get("msg", ""), "type": e.get("type", "")}
        for e in error.errors()
    ]


def invalid_input(*loc: str, message: str, kind: str = "value_error") -> RequestValidationError:
    """The 422 of one input that only its route can check: where it is, as FastAPI places its
    own (`"body", "input"`; `"header", "last-event-id"`), and what is wrong with it."""
    return RequestValidationError([{"loc": list(loc), "msg": message, "type": kind}])


def invalid_model(error: ValidationError, *loc: str) -> RequestValidationError:
    """The 422 of a part of the request that its route reads with a model of its own: the
    model's problems, each placed under `loc` (`"body"`; `"body", "context"`)."""
    return RequestValidationError([{**f, "loc": [*loc, *f["loc"]]} for f in invalid_fields(error)])


class PlainErrorsAsJson(HttpMiddleware):
    """Turns an error response written as plain text below the exception handlers (Starlette's
    body-size limit answers 413 "Content Too Large" on its own) into the `{code, message}` JSON
    body every other error has. Pure ASGI, so streamed responses pass through untouched."""

    async def http(self, scope: Scope, receive: Receive, send: Send) -> None:
        start: Message | None = None
        text = b""

        async def send_json(message: Message) -> None:
            nonlocal start, text
            if message["type"] == "http.response.start":
                content_type = MutableHeaders(scope=message).get("content-type", "")
                if message["status"] >= 400 and content_type.startswith("text/plain"):
                    start = message  # held until its body is complete
                    return
            elif start is not None and message["type"] == "http.response.body":
                text += message.get("body", b"")[: _MESSAGE_MAX_CHARS - len(text)]
                if message.get("more_body", False):
                    return
                status = start["status"]
                message_text = text.decode("utf-8", "replace").strip()
                body = json.dumps(_body(_code(status), message_text or HTTPStatus(status).phrase))
                headers = MutableHeaders(scope=start)
                headers["content-type"] = "application/json"
                headers["content-length"] = str(len(body.encode()))
                await send(start)
                message = {"type": "http.response.body", "body": body.encode()}
            await send(message)

        await self.app(scope, receive, send_json)


class UnexpectedErrors(HttpMiddleware):
    """Answers an exception no handler took with `500 {"code": "internal"}` (details go to the
    log only), then lets it go on to the server. Pure ASGI and outside everything that can
    raise, so the security headers around it reach this 500 too."""

    async def http(self, scope: Scope, receive: Receive, send: Send) -> None:
        started = False

        async def send_tracked(message: Message) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
            await send(message)

        try:
            await self.app(scope, receive, send_tracked)
        except Exception as exc:
            logger.error(
                "unhandled error on %s %s", scope.get("method"), scope.get("path"), exc_info=exc
            )
            if not started:
                response = JSONResponse(_body("internal", "internal error"), 500)
                await response(scope, receive, send)
            raise


def add_handlers(app: FastAPI) -> None:
    """Register the handlers that turn errors into `ErrorBody` responses. What escapes them is
    `UnexpectedErrors`' to answer; a plain-text error from outside them is `PlainErrorsAsJson`'."""

    @app.exception_handler(RequestValidationError)
    async def invalid(request: Request, exc: RequestValidationError) -> JSONResponse:
        fields = invalid_fields(exc)
        return JSONResponse(
            _body("invalid_request", "the request is not valid", fields=fields), 422
        )

    @app.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        message = exc.detail if isinstance(exc.detail, str) else "request refused"
        return JSONResponse(
            _body(_code(exc.status_code), message), exc.status_code, headers=exc.headers
        )

    @app.exception_handler(LatsError)
    async def core_error(request: Request, exc: LatsError) -> JSONResponse:
        if isinstance(exc, RunNotFound):
            return JSONResponse(_body("not_found", str(exc)), 404)
        if isinstance(exc, StorageFull):
            logger.warning("request refused: %s", exc.code)
            return JSONResponse(
                _body(exc.code, str(exc)), 507, headers={"Retry-After": str(RETRY_AFTER_S)}
            )
        return _unavailable(exc.code, exc)

    @app.exception_handler(DocumentRefused)
    async def document_refused(request: Request, exc: DocumentRefused) -> JSONResponse:
        """A file the reader does not take: 413 when it is too large, else 422."""
        return JSONResponse(_body(exc.code, str(exc)), 413 if exc.code == "too_large" else 422)

    @app.exception_handler(ServiceError)
    async def service_error(request: Request, exc: ServiceError) -> JSONResponse:
        return service_response(exc)


def service_response(exc: ServiceError) -> JSONResponse:
    """The response to a service error: its status, its code and its headers."""
    if isinstance(exc, RunOptionRefused):
        field = {"loc": ["body", *exc.field.split(".")], "msg": str(exc), "type": exc.code}
        return JSONResponse(_body(exc.code, str(exc), fields=[field]), 422)
    if isinstance(exc, QueueFull):
        return JSONResponse(
            _body(exc.code, str(exc)), 429, headers={"Retry-After": str(RETRY_AFTER_S)}
        )
    if isinstance(exc, StoreUnavailable):
        logger.warning("request refused: %s (%s)", exc.code, exc.__cause__ or exc)
        return JSONResponse(
            _body(exc.code, "the service's store is unreachable; try again shortly"),
            503,
            headers={"Retry-After": str(RETRY_AFTER_S)},
        )
    if isinstance(exc, RateLimited):
        return JSONResponse(
            _body(exc.code, str(exc)), 429, headers={"Retry-After": str(exc.retry_after_s)}
        )
    if exc.code == "not_found":  # a thread, an Agent Server assistant
        return JSONResponse(_body(exc.code, str(exc)), 404)
    if isinstance(exc, TooManyCommands):
        return JSONResponse(_body(exc.code, str(exc)), 429)
    if isinstance(exc, RunEnded | RunNotWaiting):
        return JSONResponse(_body(exc.code, str(exc)), 409)
    if isinstance(exc, ThreadNotFinished | RunNotFinished | AssistantConflict):
        return JSONResponse(_body(exc.code, str(exc)), 409)
    if isinstance(exc, Unauthorized):
        return JSONResponse(_body(exc.code, str(exc)), 401, headers={"WWW-Authenticate": "Bearer"})
    for refused, status in _COLLECTION_STATUSES:
        if isinstance(exc, refused):
            return JSONResponse(_body(exc.code, str(exc)), status)
    return _unavailable(exc.code, exc)


def _unavailable(code: str, exc: Exception) -> JSONResponse:
    """An error with no status of its own: logged, answered 503 without its message."""
    logger.warning("request failed: %s (%s)", code, exc)
    return JSONResponse(_body(code, "the request could not be served"), 503)
