"""A limit on the size of request bodies, checked before the application reads them."""

from __future__ import annotations

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from ._errors import TooLarge, error_response

__all__ = ["BodyLimit"]


class BodyLimit:
    """Answer 413 to a request whose body is larger than ``max_bytes``."""

    def __init__(self, app: ASGIApp, max_bytes: int) -> None:
        self.app = app
        self.max_bytes = max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = dict(scope["headers"]).get(b"content-length")
        if declared is not None and declared.isdigit() and int(declared) > self.max_bytes:
            await self._refuse(scope, receive, send)
            return
        seen = 0

        async def counted() -> Message:
            nonlocal seen
            message = await receive()
            seen += len(message.get("body", b""))
            if seen > self.max_bytes:
                raise TooLarge(self._message())
            return message

        await self.app(scope, counted, send)

    def _message(self) -> str:
        return f"The request body is larger than {self.max_bytes} bytes."

    async def _refuse(self, scope: Scope, receive: Receive, send: Send) -> None:
        await error_response(413, "TooLarge", self._message())(scope, receive, send)
