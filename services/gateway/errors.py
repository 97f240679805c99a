"""OpenAI-style error bodies, `{"error": {"message", "type", "param", "code"}}`, for every failure the gateway answers.

`code` is the HTTP status as an integer (as vLLM / vLLM-Omni send it); `type` is OpenAI's error type name.
Schema errors (FastAPI's 422) are answered as 400, as vLLM-Omni does.
"""

from __future__ import annotations

import logging

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

log = logging.getLogger("omni.gateway")

ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    405: "invalid_request_error",
    409: "conflict_error",
    413: "invalid_request_error",
    415: "invalid_request_error",
    429: "rate_limit_error",
    500: "server_error",
    503: "service_unavailable_error",
    504: "timeout_error",
}


class APIError(Exception):
    """Raise anywhere in a request to answer `status` with an OpenAI-style body."""

    def __init__(
        self, status: int, message: str, param: str | None = None, headers: dict[str, str] | None = None
    ) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.param = param
        self.headers = headers or {}


def error_body(status: int, message: str, param: str | None = None) -> dict:
    return {
        "error": {"message": message, "type": ERROR_TYPES.get(status, "server_error"), "param": param, "code": status}
    }


def error_response(status: int, message: str, param: str | None = None, headers: dict | None = None) -> JSONResponse:
    return JSONResponse(error_body(status, message, param), status_code=status, headers=headers)


def bad_request(message: str, param: str | None = None) -> APIError:
    return APIError(400, message, param)


def _validation_message(exc: RequestValidationError) -> tuple[str, str | None]:
    """The first schema error as one readable line, and the field it is about."""
    errors = exc.errors()
    if not errors:
        return "invalid request", None
    first = errors[0]
    if first.get("type") == "json_invalid":
        return "request body is not valid JSON", None
    loc = [str(part) for part in first.get("loc", ()) if part not in ("body", "query", "path", "header")]
    param = ".".join(loc) or None
    message = first.get("msg", "invalid value").removeprefix("Value error, ")
    return (f"{param}: {message}" if param else message), param


def install_error_handlers(app: FastAPI) -> None:
    @app.exception_handler(APIError)
    async def _api_error(request: Request, exc: APIError) -> JSONResponse:
        return error_response(exc.status, exc.message, exc.param, exc.headers)

    @app.exception_handler(RequestValidationError)
    async def _validation_error(request: Request, exc: RequestValidationError) -> JSONResponse:
        message, param = _validation_message(exc)
        return error_response(400, message, param)

    @app.exception_handler(StarletteHTTPException)
    async def _http_error(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        return error_response(exc.status_code, str(exc.detail), None, dict(exc.headers or {}))

    @app.exception_handler(Exception)
    async def _unexpected(request: Request, exc: Exception) -> JSONResponse:
        log.exception("unhandled error on %s %s", request.method, request.url.path)
        return error_response(500, f"internal error: {type(exc).__name__}")
