"""Translation of core errors to HTTP responses. The only place that knows both."""

from __future__ import annotations

import logging

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from agents.errors import LatsError, RunNotFound
from app.limits import RateLimited
from app.queue import QueueFull

logger = logging.getLogger(__name__)

RETRY_AFTER_S = 5


class Unauthorized(LatsError):
    code = "unauthorized"


def _body(code: str, message: str, **extra: object) -> dict[str, object]:
    return {"code": code, "message": message, **extra}


def install(app: FastAPI) -> None:
    """Register the handlers that turn errors into `ErrorBody` responses."""

    @app.exception_handler(RequestValidationError)
    async def invalid(request: Request, exc: RequestValidationError) -> JSONResponse:
        fields = [
            {"loc": list(e.get("loc", [])), "msg": e.get("msg", ""), "type": e.get("type", "")}
            for e in exc.errors()
        ]
        return JSONResponse(
            _body("invalid_request", "the request is not valid", fields=fields), 422
        )

    @app.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        code = {404: "not_found", 405: "method_not_allowed", 413: "too_large"}.get(
            exc.status_code, "http_error"
        )
        message = exc.detail if isinstance(exc.detail, str) else "request refused"
        return JSONResponse(_body(code, message), exc.status_code, headers=exc.headers)

    @app.exception_handler(LatsError)
    async def core_error(request: Request, exc: LatsError) -> JSONResponse:
        if isinstance(exc, RunNotFound):
            return JSONResponse(_body("not_found", str(exc)), 404)
        if isinstance(exc, QueueFull):
            return JSONResponse(
                _body(exc.code, str(exc)), 429, headers={"Retry-After": str(RETRY_AFTER_S)}
            )
        if isinstance(exc, RateLimited):
            return JSONResponse(
                _body(exc.code, str(exc)), 429, headers={"Retry-After": str(exc.retry_after_s)}
            )
        if isinstance(exc, Unauthorized):
            return JSONResponse(
                _body(exc.code, str(exc)), 401, headers={"WWW-Authenticate": "Bearer"}
            )
        logger.warning("request failed: %s (%s)", exc.code, exc)
        return JSONResponse(_body(exc.code, "the request could not be served"), 503)

    @app.exception_handler(Exception)
    async def unexpected(request: Request, exc: Exception) -> JSONResponse:
        logger.error("unhandled error on %s %s", request.method, request.url.path, exc_info=exc)
        return JSONResponse(_body("internal", "internal error"), 500)
