"""The ``web_fetch`` built-in tool: an HTTP GET with an SSRF guard, a timeout and a size cap.

Each hop (the first request and every redirect) resolves its host once, checks every
address with :class:`AddressPolicy`, and connects to the checked address with the original
``Host`` header and TLS server name, so certificate checks still name the host. Proxy
settings of the environment are ignored (a proxy would connect on our behalf, unchecked).
The body is read until the cap and the rest is never downloaded. Its text is untrusted:
the tool's trust class makes the inbound sanitiser screen and wrap it.
"""

from __future__ import annotations

import asyncio
import html.parser
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import httpx

from bastion.core import RunContext, UserError
from bastion.observability import trace_headers
from bastion.security import PROVENANCE
from bastion.tools._outcome import ToolError
from bastion.tools._tool import Tool, ToolResult, tool

from ._ssrf import AddressPolicy, BlockedAddress, Resolver, system_resolver

__all__ = [
    "FETCH_MAX_BYTES",
    "FETCH_TIMEOUT",
    "FetchResult",
    "fetch",
    "web_fetch",
    "web_fetch_tool",
]

FETCH_TIMEOUT = 15.0
"""Seconds a whole fetch (every redirect included) may take."""
FETCH_MAX_BYTES = 50_000
"""Bytes of the body kept; the rest is not downloaded."""
_MAX_REDIRECTS = 5
_USER_AGENT = "bastion-web-fetch/0.1"


@dataclass(frozen=True, slots=True, kw_only=True)
class FetchResult:
    """What a fetch got.

    Attributes:
        url: The final URL, after redirects.
        status: HTTP status code.
        content_type: The ``Content-Type`` header ('' when absent).
        body: The body decoded to text (HTML reduced to its readable text).
        truncated: The body was longer than the cap.
        address: The IP address connected to for the final hop.
    """

    url: str
    status: int
    content_type: str
    body: str
    truncated: bool
    address: str


async def fetch(
    url: str,
    *,
    policy: AddressPolicy | None = None,
    timeout: float = FETCH_TIMEOUT,  # noqa: ASYNC109 - one deadline over every redirect
    max_bytes: int = FETCH_MAX_BYTES,
    resolver: Resolver = system_resolver,
    transport: httpx.AsyncBaseTransport | None = None,
    headers: Mapping[str, str] | None = None,
) -> FetchResult:
    """GET ``url`` under the SSRF guard, following up to 5 redirects.

    ``headers`` go with every hop (the tool passes the W3C trace context when tracing is on).

    Raises:
        BlockedAddress: A hop would reach a refused address.
        ValueError: The URL is not an absolute http(s) URL.
        TimeoutError: The whole fetch took longer than ``timeout``.
        httpx.HTTPError: The connection failed.
    """
    policy = policy or AddressPolicy()
    async with (
        asyncio.timeout(timeout),
        httpx.AsyncClient(
            trust_env=False, follow_redirects=False, timeout=timeout, transport=transport
        ) as client,
    ):
        current = _parse(url)
        for _ in range(_MAX_REDIRECTS + 1):
            host = current.host
            port = current.port or (443 if current.scheme == "https" else 80)
            address = policy.check(host, await resolver(host, port))
            request = client.build_request(
                "GET",
                current.copy_with(host=address),
                headers={
                    **(headers or {}),
                    "Host": current.netloc.decode("ascii"),
                    "User-Agent": _USER_AGENT,
                },
                extensions={"sni_hostname": host} if current.scheme == "https" else {},
            )
            response = await client.send(request, stream=True)
            try:
                location = response.headers.get("location")
                if response.is_redirect and location:
                    current = _parse(str(current.join(location)))
                    continue
                body, truncated = await _read_capped(response, max_bytes)
            finally:
                await response.aclose()
            content_type = response.headers.get("content-type", "")
            text = body.decode(response.charset_encoding or "utf-8", errors="replace")
            if "html" in content_type.lower():
                text = html_to_text(text)
            return FetchResult(
                url=str(current),
                status=response.status_code,
                content_type=content_type,
                body=text,
                truncated=truncated,
                address=address,
            )
    raise ValueError(f"More than {_MAX_REDIRECTS} redirects starting from {url!r}.")


def _parse(url: str) -> httpx.URL:
    try:
        parsed = httpx.URL(url)
    except (httpx.InvalidURL, TypeError) as exc:
        raise ValueError(f"Invalid URL {url!r}: {exc}") from None
    if parsed.scheme not in ("http", "https") or not parsed.host:
        raise ValueError(f"Invalid URL {url!r}: give an absolute http:// or https:// URL.")
    return parsed


async def _read_capped(response: httpx.Response, max_bytes: int) -> tuple[bytes, bool]:
    chunks: list[bytes] = []
    kept = 0
    async for chunk in response.aiter_bytes():
        chunks.append(chunk[: max_bytes - kept])
        kept += len(chunks[-1])
        if kept >= max_bytes:
            return b"".join(chunks), True  # stop downloading: the rest is never read
    return b"".join(chunks), False


class _TextExtractor(html.parser.HTMLParser):
    _SKIP = frozenset({"script", "style", "noscript", "template", "svg", "head"})
    _BREAK = frozenset({"p", "div", "br", "li", "tr", "h1", "h2", "h3", "h4", "h5", "h6", "pre"})

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self.skipping = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in self._SKIP:
            self.skipping += 1
        elif tag in self._BREAK:
            self.parts.append("\n")

    def handle_endtag(self, tag: str) -> None:
        if tag in self._SKIP and self.skipping:
            self.skipping -= 1
        elif tag in self._BREAK:
            self.parts.append("\n")

    def handle_data(self, data: str) -> None:
        if not self.skipping:
            self.parts.append(data)


def html_to_text(markup: str) -> str:
    """The readable text of an HTML page: no scripts, styles or tags; blank runs collapsed."""
    parser = _TextExtractor()
    parser.feed(markup)
    parser.close()
    lines = (" ".join(line.split()) for line in "".join(parser.parts).splitlines())
    return "\n".join(line for line in lines if line)


def web_fetch_tool(
    *,
    allow: Sequence[str] = (),
    timeout: float = FETCH_TIMEOUT,
    max_bytes: int = FETCH_MAX_BYTES,
    resolver: Resolver = system_resolver,
    name: str = "web_fetch",
    trace_context: bool = False,
) -> Tool:
    """Make a ``web_fetch`` tool.

    Args:
        allow: IP addresses or CIDR networks it may reach although they are internal
            (loopback, private, link-local); by default only public addresses.
        timeout: Seconds for the whole fetch, redirects included.
        max_bytes: Bytes of the body kept.
        resolver: Resolves host names (default: the system resolver).
        name: The tool's name.
        trace_context: Send the tool call's W3C trace context (``traceparent``) with each
            request while tracing is on. Off by default: the sites fetched are arbitrary,
            and a trace id handed to them says which run asked.

    Raises:
        UserError: An ``allow`` entry is not a network, a limit is not positive, or
            ``trace_context`` is not a bool.
    """
    policy = AddressPolicy.of(allow)
    if not timeout > 0 or not max_bytes > 0:
        raise UserError(
            f"web_fetch_tool: timeout and max_bytes must be > 0, got {timeout!r}, {max_bytes!r}."
        )
    if not isinstance(trace_context, bool):  # pyright: ignore[reportUnnecessaryIsInstance]
        raise UserError(f"web_fetch_tool: trace_context must be a bool, not {trace_context!r}.")

    async def web_fetch(ctx: RunContext[Any], url: str) -> ToolResult:
        """Fetch a web page or file by HTTP(S) GET and return its text (HTML reduced to text).

        Args:
            ctx: The run context.
            url: Absolute http:// or https:// URL.
        """
        try:
            result = await fetch(
                url,
                policy=policy,
                timeout=timeout,
                max_bytes=max_bytes,
                resolver=resolver,
                headers=trace_headers(ctx) if trace_context else None,
            )
        except BlockedAddress as exc:
            raise ToolError(str(exc), kind="sandbox_violation") from None
        except ValueError as exc:
            raise ToolError(str(exc), kind="invalid_input") from None
        except TimeoutError:
            raise ToolError(
                f"Fetching {url!r} took longer than {timeout:g}s.", kind="timeout"
            ) from None
        except (httpx.HTTPError, OSError) as exc:
            raise ToolError(f"Fetching {url!r} failed: {type(exc).__name__}: {exc}") from None
        return _result(result, max_bytes)

    return tool(
        web_fetch,
        name=name,
        side_effect_class="read_only",
        trust_class="web_search",  # untrusted: screened and wrapped by the inbound sanitiser
        label="Fetch a web page",
    )


def _result(result: FetchResult, max_bytes: int) -> ToolResult:
    """What the model reads of a fetch: the status lines and the body, with its provenance."""
    body = result.body
    if result.truncated:
        body += f"\n[body truncated: showing the first {max_bytes:,} bytes of a longer response.]"
    header = f"URL: {result.url}\nStatus: {result.status}\nContent-Type: {result.content_type}"
    return ToolResult(
        output=f"{header}\n\n{body}",
        metadata={
            "status": result.status,
            "url": result.url,
            "address": result.address,
            PROVENANCE: {"url": result.url, "kind": "web"},  # the data-flow ledger's source
        },
    )


web_fetch: Tool = web_fetch_tool()
"""``web_fetch`` with the defaults: public addresses only, 15 s, 50 KB."""
