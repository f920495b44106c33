"""The Vercel Sandbox REST API, the part a runtime needs, over httpx.

Endpoints (all under ``{base_url}``, ``teamId`` as a query parameter, bearer auth):

- ``POST /v1/sandboxes`` creates a sandbox: ``projectId``, ``runtime``, ``timeout`` (ms),
  ``resources.vcpus``, ``networkPolicy.mode``; answers ``{"sandbox": {...}, "routes": [...]}``.
- ``POST /v1/sandboxes/{id}/cmd`` starts a command: ``command``, ``args``, ``cwd``, ``env``,
  ``sudo``; answers ``{"command": {"id", "exitCode": null, ...}}``.
- ``GET /v1/sandboxes/{id}/cmd/{cmdId}/logs`` streams its output as NDJSON lines
  ``{"stream": "stdout" | "stderr", "data": "..."}`` (``"error"`` with ``{code, message}``).
- ``GET /v1/sandboxes/{id}/cmd/{cmdId}?wait=true`` blocks until it exits: ``exitCode``.
- ``POST /v1/sandboxes/{id}/{cmdId}/kill`` sends it a signal.
- ``POST /v1/sandboxes/{id}/fs/read`` (``path``, ``cwd``) answers the file's bytes (404: none).
- ``POST /v1/sandboxes/{id}/fs/write`` takes a gzipped tar extracted in the ``x-cwd`` header's
  directory.
- ``POST /v1/sandboxes/{id}/stop`` stops the sandbox.

Errors come as ``{"error": {"code", "message"}}``; :class:`VercelSandboxError` carries the
status, code and message, never the token.
"""

from __future__ import annotations

import asyncio
import gzip
import io
import json
import tarfile
from collections.abc import AsyncGenerator, Mapping
from dataclasses import dataclass
from typing import Literal, TypedDict, Unpack, cast

import httpx

from bastion.core import JsonValue, RunError

__all__ = [
    "Command",
    "CommandBody",
    "CreateBody",
    "SandboxInfo",
    "VercelApi",
    "VercelSandboxError",
]

_RETRIED = frozenset({429, 502, 503, 504})
_MAX_RETRIES = 2
_MAX_RETRY_WAIT = 10.0


class VercelSandboxError(RunError):
    """The Vercel Sandbox API refused or failed a request.

    Attributes:
        status: The HTTP status (0 when the request never got an answer).
        code: Vercel's error code, when the answer had one.
        endpoint: The method and path that failed (no query, so no team id or token).
    """

    def __init__(self, status: int, code: str | None, message: str, endpoint: str) -> None:
        super().__init__(
            f"Vercel Sandbox API {endpoint} failed ({status}{f' {code}' if code else ''}): "
            f"{message}"
        )
        self.status = status
        self.code = code
        self.endpoint = endpoint


class _Request(TypedDict, total=False):
    """What one request sends besides its method and path (httpx's keywords)."""

    json: Mapping[str, object]
    params: Mapping[str, str]
    content: bytes
    headers: Mapping[str, str]


class _Resources(TypedDict):
    vcpus: int


class _NetworkPolicy(TypedDict):
    mode: Literal["allow-all", "deny-all"]


class CreateBody(TypedDict):
    """What ``POST /v1/sandboxes`` takes."""

    projectId: str | None
    runtime: str
    timeout: int
    """The sandbox's lifetime, in milliseconds."""
    resources: _Resources
    networkPolicy: _NetworkPolicy


class CommandBody(TypedDict):
    """What ``POST /v1/sandboxes/{id}/cmd`` takes."""

    command: str
    args: list[str]
    cwd: str
    env: dict[str, str]
    sudo: bool


@dataclass(frozen=True, slots=True)
class SandboxInfo:
    """A created sandbox: its id and work dir."""

    id: str
    cwd: str
    status: str


@dataclass(frozen=True, slots=True)
class Command:
    """A started command."""

    id: str


class VercelApi:
    """A thin async client of the endpoints above (one httpx client, reused)."""

    def __init__(
        self, *, base_url: str, token: str, team_id: str | None, timeout: float = 30.0
    ) -> None:
        params = {"teamId": team_id} if team_id else {}
        self._client = httpx.AsyncClient(
            base_url=base_url.rstrip("/"),
            headers={"authorization": f"Bearer {token}", "user-agent": "bastion-runtime"},
            params=params,
            timeout=httpx.Timeout(timeout, read=None),  # logs and waits stream for long
        )

    async def aclose(self) -> None:
        """Close the connection pool."""
        await self._client.aclose()

    async def create(self, body: CreateBody) -> SandboxInfo:
        """Create a sandbox."""
        endpoint = "POST /v1/sandboxes"
        data = await self._json("POST", "/v1/sandboxes", json=body)
        sandbox = _object(data, "sandbox", endpoint)
        return SandboxInfo(
            id=_text(sandbox, "id", endpoint),
            cwd=_text(sandbox, "cwd", endpoint),
            status=_text(sandbox, "status", endpoint),
        )

    async def run(self, sandbox_id: str, body: CommandBody) -> Command:
        """Start a command (without waiting for it)."""
        path = f"/v1/sandboxes/{sandbox_id}/cmd"
        data = await self._json("POST", path, json=body)
        return Command(id=_text(_object(data, "command", f"POST {path}"), "id", f"POST {path}"))

    async def logs(self, sandbox_id: str, cmd_id: str) -> AsyncGenerator[tuple[str, str], None]:
        """The command's output as ``(stream, data)`` pieces, until it exits."""
        path = f"/v1/sandboxes/{sandbox_id}/cmd/{cmd_id}/logs"
        async with self._client.stream("GET", path) as response:
            if response.is_error:
                await response.aread()
                raise _error(response, f"GET {path}")
            async for line in response.aiter_lines():
                if not line.strip():
                    continue
                item = json.loads(line)
                if item["stream"] == "error":
                    raise VercelSandboxError(
                        response.status_code,
                        item["data"].get("code"),
                        item["data"].get("message", "stream error"),
                        f"GET {path}",
                    )
                yield item["stream"], item["data"]

    async def wait(self, sandbox_id: str, cmd_id: str) -> int:
        """Block until the command exits; its exit code."""
        path = f"/v1/sandboxes/{sandbox_id}/cmd/{cmd_id}"
        data = await self._json("GET", path, params={"wait": "true"})
        exit_code = _object(data, "command", f"GET {path}").get("exitCode")
        if not isinstance(exit_code, int | float | str):
            raise _malformed(f"GET {path}", "command.exitCode")
        return int(exit_code)

    async def kill(self, sandbox_id: str, cmd_id: str, signal: int = 9) -> None:
        """Send ``signal`` to a running command."""
        await self._json(
            "POST", f"/v1/sandboxes/{sandbox_id}/{cmd_id}/kill", json={"signal": signal}
        )

    async def read(self, sandbox_id: str, path: str, cwd: str) -> bytes | None:
        """A file's bytes, or ``None`` when there is no such file."""
        endpoint = f"/v1/sandboxes/{sandbox_id}/fs/read"
        response = await self._send("POST", endpoint, json={"path": path, "cwd": cwd})
        if response.status_code == 404:
            return None
        if response.is_error:
            raise _error(response, f"POST {endpoint}")
        return response.content

    async def write(self, sandbox_id: str, extract_dir: str, files: Mapping[str, bytes]) -> None:
        """Write files (paths relative to ``extract_dir``) as one gzipped tar."""
        endpoint = f"/v1/sandboxes/{sandbox_id}/fs/write"
        response = await self._send(
            "POST",
            endpoint,
            content=_tarball(files),
            headers={"content-type": "application/gzip", "x-cwd": extract_dir},
        )
        if response.is_error:
            raise _error(response, f"POST {endpoint}")

    async def stop(self, sandbox_id: str) -> None:
        """Stop the sandbox."""
        await self._json("POST", f"/v1/sandboxes/{sandbox_id}/stop")

    async def _json(
        self, method: str, path: str, **request: Unpack[_Request]
    ) -> Mapping[str, JsonValue]:
        response = await self._send(method, path, **request)
        if response.is_error:
            raise _error(response, f"{method} {path}")
        try:
            data = response.json()
        except ValueError:
            raise VercelSandboxError(
                response.status_code, None, "the answer is not JSON", f"{method} {path}"
            ) from None
        if not isinstance(data, dict):
            raise VercelSandboxError(
                response.status_code, None, "the answer is not a JSON object", f"{method} {path}"
            )
        return cast("Mapping[str, JsonValue]", data)  # a JSON object, from httpx's untyped json()

    async def _send(self, method: str, path: str, **request: Unpack[_Request]) -> httpx.Response:
        """Send, retrying rate limits and gateway errors (``Retry-After`` honoured, capped)."""
        for attempt in range(_MAX_RETRIES + 1):
            try:
                response = await self._client.request(method, path, **request)
            except httpx.HTTPError as exc:
                raise VercelSandboxError(0, None, type(exc).__name__, f"{method} {path}") from None
            if response.status_code not in _RETRIED or attempt == _MAX_RETRIES:
                return response
            await asyncio.sleep(_retry_after(response, attempt))
        raise AssertionError("unreachable")  # pragma: no cover - the loop always returns


def _object(data: Mapping[str, JsonValue], key: str, endpoint: str) -> Mapping[str, JsonValue]:
    """The JSON object ``data[key]`` of an answer (none: a ``VercelSandboxError``)."""
    value = data.get(key)
    if not isinstance(value, Mapping):
        raise _malformed(endpoint, key)
    return value


def _text(data: Mapping[str, JsonValue], key: str, endpoint: str) -> str:
    """The string ``data[key]`` of an answer (none: a ``VercelSandboxError``)."""
    value = data.get(key)
    if not isinstance(value, str):
        raise _malformed(endpoint, key)
    return value


def _malformed(endpoint: str, key: str) -> VercelSandboxError:
    return VercelSandboxError(200, None, f"the answer has no {key!r}", endpoint)


def _retry_after(response: httpx.Response, attempt: int) -> float:
    header = response.headers.get("retry-after", "")
    try:
        wait = float(header)
    except ValueError:
        wait = 0.5 * 2**attempt
    return min(max(wait, 0.0), _MAX_RETRY_WAIT)


def _error(response: httpx.Response, endpoint: str) -> VercelSandboxError:
    code: str | None = None
    message = response.reason_phrase or "error"
    try:
        body = response.json()
    except ValueError:
        body = None
    if isinstance(body, dict):
        error = body.get("error")  # pyright: ignore[reportUnknownMemberType, reportUnknownVariableType]
        if isinstance(error, dict):
            code = str(error.get("code")) if error.get("code") else None  # pyright: ignore[reportUnknownMemberType, reportUnknownArgumentType]
            message = str(error.get("message") or message)  # pyright: ignore[reportUnknownMemberType, reportUnknownArgumentType]
    return VercelSandboxError(response.status_code, code, message, endpoint)


def _tarball(files: Mapping[str, bytes]) -> bytes:
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w") as tar:
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            info.mode = 0o644
            tar.addfile(info, io.BytesIO(data))
    return gzip.compress(raw.getvalue())
