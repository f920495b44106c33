"""JSON errors in the library's taxonomy: what went wrong and which class of error it was."""

from __future__ import annotations

import logging

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import BaseModel, JsonValue
from starlette.exceptions import HTTPException

from bastion.core import BastionError, ConcurrentRunError, UserError
from bastion.stores import JournalConflict, LeaseHeld, StoreError

from ._auth import Unauthorized
from ._models import ErrorBody, ErrorInfo

__all__ = [
    "Conflict",
    "NotFound",
    "TooLarge",
    "Unavailable",
    "error_response",
    "error_responses",
    "install_error_handlers",
]

_log = logging.getLogger("bastion.server")


class NotFound(UserError):
    """No such run, agent or pending item, or one another tenant owns."""


class Conflict(UserError):
    """The run is in a state that does not allow the request (in flight, say)."""


class TooLarge(UserError):
    """A request body over the server's size limit."""


class Unavailable(BastionError):
    """The server cannot serve this now: it is draining, or no worker answers (503)."""


def error_response(
    status: int, kind: str, message: str, detail: list[JsonValue] | None = None
) -> JSONResponse:
    """A JSON error body with ``status``."""
    body = ErrorBody(error=ErrorInfo(type=kind, message=message, detail=detail))
    headers = {"WWW-Authenticate": "Bearer"} if status == 401 else None
    return JSONResponse(body.model_dump(exclude_none=True), status_code=status, headers=headers)


def error_responses(*codes: int) -> dict[int | str, dict[str, type[BaseModel]]]:
    """The ``responses`` of a router whose routes answer ``codes`` with an :class:`ErrorBody`."""
    return {code: {"model": ErrorBody} for code in codes}


def _status(exc: BastionError) -> int:
    match exc:
        case NotFound():
            return 404
        case Unauthorized():
            return 401
        case TooLarge():
            return 413
        case Unavailable():
            return 503
        case Conflict() | ConcurrentRunError() | LeaseHeld() | JournalConflict():
            return 409
        case UserError():
            return 400
        case StoreError():
            return 503
        case _:
            return 500


async def _bastion_error(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, BastionError)
    status = _status(exc)
    if status == 500:
        _log.error("request failed", exc_info=exc)
    return error_response(status, type(exc).__name__, str(exc))


async def _validation_error(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, RequestValidationError)
    problems = exc.errors()
    errors: list[JsonValue] = [
        {"loc": list(e.get("loc", ())), "msg": str(e.get("msg", "")), "type": e.get("type")}
        for e in problems
    ]
    where = "; ".join(
        f"{'.'.join(map(str, e.get('loc', ())))}: {e.get('msg', '')}" for e in problems
    )
    return error_response(422, "ValidationError", f"Invalid request: {where}", errors)


async def _http_error(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, HTTPException)
    return error_response(exc.status_code, "HTTPError", str(exc.detail))


async def _unexpected(request: Request, exc: Exception) -> JSONResponse:
    _log.error("request failed", exc_info=exc)
    return error_response(500, "InternalError", "The server failed; see its log.")


def install_error_handlers(app: FastAPI) -> None:
    """Answer every failure with a JSON :class:`ErrorBody`."""
    app.add_exception_handler(BastionError, _bastion_error)
    app.add_exception_handler(RequestValidationError, _validation_error)
    app.add_exception_handler(HTTPException, _http_error)
    app.add_exception_handler(Exception, _unexpected)
