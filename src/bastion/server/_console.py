"""The web console: static files served at ``/console`` (no build step), and ``/agents``.

The console is plain HTML, CSS and JavaScript modules shipped in the package
(``static/console``). It talks to the server's JSON API and event streams only, with the
bearer token the user enters; the pages are served without auth (they hold no data) and
with a strict Content-Security-Policy: scripts, styles and connections from this origin only.
"""

from __future__ import annotations

from pathlib import Path

from fastapi import APIRouter, FastAPI, Request
from fastapi.responses import RedirectResponse
from pydantic import BaseModel
from starlette.staticfiles import StaticFiles
from starlette.types import Message, Receive, Scope, Send

from ._service import Service

__all__ = ["AgentInfo", "agents_router", "mount_console"]

STATIC = Path(__file__).parent / "static" / "console"

_HEADERS = [
    (
        b"content-security-policy",
        b"default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; "
        b"img-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
    ),
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"no-referrer"),
    (b"cache-control", b"no-cache"),
]


class AgentInfo(BaseModel):
    """A served agent."""

    name: str
    model: str


agents_router = APIRouter(tags=["server"])


@agents_router.get("/agents", response_model=list[AgentInfo])
async def list_agents(request: Request) -> list[AgentInfo]:
    """The served agents, by name (the caller must be known when the server has auth)."""
    service: Service = request.app.state.bastion
    service.caller(request)
    return [AgentInfo(name=n, model=a.config.model.key) for n, a in service.manager.agents.items()]


class _Console(StaticFiles):
    """The console's files, each answered with the console's security headers."""

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        async def secured(message: Message) -> None:
            if message["type"] == "http.response.start":
                message["headers"] = [*message.get("headers", []), *_HEADERS]
            await send(message)

        await super().__call__(scope, receive, secured)


def mount_console(app: FastAPI) -> None:
    """Serve the console at ``/console/`` (``/console`` redirects there)."""

    @app.get("/console", include_in_schema=False)
    async def console() -> RedirectResponse:  # pyright: ignore[reportUnusedFunction]
        return RedirectResponse("/console/")

    app.mount("/console", _Console(directory=STATIC, html=True), name="console")
