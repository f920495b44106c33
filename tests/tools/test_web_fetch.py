"""``web_fetch`` against a real HTTP server on 127.0.0.1, and its SSRF guard (real resolution)."""

from __future__ import annotations

import ipaddress
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, cast

import pytest
from hypothesis import given
from hypothesis import strategies as st

from bastion import Agent
from bastion.core import UserError
from bastion.testing import Call, ScriptedModel, Turn
from bastion.tools.builtins import AddressPolicy, BlockedAddress, fetch, web_fetch_tool
from bastion.tools.builtins._web_fetch import _parse

LOCAL = ("127.0.0.1/32",)
_release = threading.Event()


class _Handler(BaseHTTPRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        pass

    def _send(
        self, status: int, body: bytes, content_type: str = "text/plain", **headers: str
    ) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        for name, value in headers.items():
            self.send_header(name.replace("_", "-"), value)
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self) -> None:
        port = cast("tuple[str, int]", self.server.server_address)[1]
        routes: dict[str, Any] = {
            "/page": lambda: self._send(
                200,
                b"<html><head><title>t</title><script>evil()</script></head>"
                b"<body><h1>Orders</h1><p>Order 1042 &amp; 1043 shipped.</p></body></html>",
                "text/html; charset=utf-8",
            ),
            "/host": lambda: self._send(200, self.headers["Host"].encode()),
            "/big": lambda: self._send(200, b"z" * 200_000),
            "/hop": lambda: self._send(302, b"", Location="/page"),
            "/to-loopback": lambda: self._send(302, b"", Location=f"http://127.0.0.2:{port}/page"),
            "/to-metadata": lambda: self._send(
                301, b"", Location="http://169.254.169.254/latest/meta-data/"
            ),
            "/loop": lambda: self._send(302, b"", Location="/loop"),
            "/hang": lambda: _release.wait(30),
        }
        routes.get(self.path, lambda: self._send(404, b"not found"))()


@pytest.fixture(scope="module")
def server() -> Iterator[str]:
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    httpd.daemon_threads = True
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    _release.set()
    httpd.shutdown()
    httpd.server_close()


async def test_fetches_a_page_as_text(server: str) -> None:  # covers S-27
    result = await fetch(f"{server}/page", policy=AddressPolicy.of(LOCAL))
    assert result.status == 200
    assert result.body == "Orders\nOrder 1042 & 1043 shipped."  # no script, no tags
    assert result.address == "127.0.0.1"


async def test_body_is_capped_at_50_kb(server: str) -> None:  # covers S-27
    result = await fetch(f"{server}/big", policy=AddressPolicy.of(LOCAL))
    assert result.truncated
    assert result.body == "z" * 50_000


async def test_redirects_are_followed_and_rechecked(server: str) -> None:
    policy = AddressPolicy.of(LOCAL)
    followed = await fetch(f"{server}/hop", policy=policy)
    assert (followed.url, followed.status) == (f"{server}/page", 200)
    with pytest.raises(BlockedAddress, match=r"127\.0\.0\.2: it is a loopback address"):
        await fetch(f"{server}/to-loopback", policy=policy)
    with pytest.raises(BlockedAddress, match="it is a cloud metadata address"):
        await fetch(f"{server}/to-metadata", policy=policy)
    with pytest.raises(ValueError, match="More than 5 redirects"):
        await fetch(f"{server}/loop", policy=policy)


async def test_connects_to_the_checked_address_only(server: str) -> None:
    """DNS rebinding: the name is resolved once; the connection goes to that address."""
    port = int(server.rsplit(":", 1)[1])
    answers = [["127.0.0.1"], ["10.0.0.1"]]
    asked: list[str] = []

    async def rebinding(host: str, port: int) -> list[str]:
        asked.append(host)
        return answers.pop(0)

    result = await fetch(
        f"http://rebind.test:{port}/host", policy=AddressPolicy.of(LOCAL), resolver=rebinding
    )
    assert asked == ["rebind.test"]
    assert result.body == f"rebind.test:{port}"  # the Host header names the host, not the IP


async def test_one_internal_address_among_public_ones_is_refused() -> None:
    async def mixed(host: str, port: int) -> list[str]:
        return ["93.184.216.34", "10.1.2.3"]

    with pytest.raises(BlockedAddress, match=r"'mixed\.test' \(10\.1\.2\.3\): it is a private"):
        await fetch("http://mixed.test/", resolver=mixed)


@pytest.mark.parametrize(
    ("url", "category"),
    [
        ("http://localhost:9/", "loopback"),
        ("http://127.0.0.1:9/", "loopback"),
        ("http://2130706433:9/", "loopback"),  # 127.0.0.1 spelled as one number
        ("http://[::1]:9/", "loopback"),
        ("http://[::ffff:127.0.0.1]:9/", "loopback"),
        ("http://169.254.169.254/latest/meta-data/", "cloud metadata"),
        ("http://169.254.1.1/", "link-local"),
        ("http://10.0.0.1/", "private"),
        ("http://192.168.1.1/", "private"),
        ("http://172.16.0.1/", "private"),
        ("http://[fd00::1]/", "private"),
        ("http://0.0.0.0:9/", "unspecified"),
        ("http://100.100.100.200/", "cloud metadata"),
    ],
)
async def test_internal_addresses_are_refused_with_real_resolution(url: str, category: str) -> None:
    with pytest.raises(BlockedAddress, match=f"it is a {category} address"):
        await fetch(url, timeout=5)


async def test_the_tool_through_an_agent(server: str) -> None:  # covers S-27
    model = ScriptedModel(
        [
            Turn(tool_calls=[Call("web_fetch", {"url": f"{server}/page"})]),
            Turn(tool_calls=[Call("web_fetch", {"url": "http://169.254.169.254/"})]),
            Turn(tool_calls=[Call("web_fetch", {"url": "file:///etc/passwd"})]),
            Turn(tool_calls=[Call("web_fetch", {"url": f"{server}/hang"})]),
            "done",
        ]
    )
    fetch_tool = web_fetch_tool(allow=LOCAL, timeout=0.5)
    assert fetch_tool.trust_class == "web_search"
    result = await Agent("reader", model=model, tools=[fetch_tool]).run("go")

    page, metadata, scheme, hang = result.tool_calls
    assert not page.is_error
    # Untrusted: the inbound sanitiser wrapped the page before the model read it.
    assert page.result == (
        "[bastion:untrusted-data begin]\n"
        f"URL: {server}/page\nStatus: 200\nContent-Type: text/html; charset=utf-8\n\n"
        "Orders\nOrder 1042 & 1043 shipped.\n"
        "[bastion:untrusted-data end]"
    )
    assert (metadata.error_kind, scheme.error_kind, hang.error_kind) == (
        "sandbox_violation",
        "invalid_input",
        "timeout",
    )
    assert "cloud metadata" in metadata.result
    assert "give an absolute http:// or https:// URL" in scheme.result
    assert hang.result == f"Fetching '{server}/hang' took longer than 0.5s."


def test_invalid_configuration_is_a_user_error() -> None:
    with pytest.raises(UserError, match="'localhost' is not an IP address or CIDR network"):
        web_fetch_tool(allow=["localhost"])
    with pytest.raises(UserError, match="a list of networks"):
        web_fetch_tool(allow="10.0.0.0/8")
    with pytest.raises(UserError, match="must be > 0"):
        web_fetch_tool(timeout=0)


_INTERNAL = [
    ipaddress.ip_network(n)
    for n in (
        "127.0.0.0/8",
        "10.0.0.0/8",
        "172.16.0.0/12",
        "192.168.0.0/16",
        "169.254.0.0/16",
        "0.0.0.0/8",
        "100.64.0.0/10",
    )
]


@given(st.ip_addresses(v=4))
def test_ipv4_and_its_ipv6_disguises_agree(address: ipaddress.IPv4Address) -> None:
    policy = AddressPolicy()
    verdict = policy.reason(str(address))
    assert policy.reason(f"::ffff:{address}") == verdict  # IPv4-mapped
    assert (
        policy.reason(str(ipaddress.IPv6Address((0x2002 << 112) | (int(address) << 80)))) == verdict
    )  # 6to4
    if any(address in network for network in _INTERNAL):
        assert verdict is not None


@given(st.text(max_size=60))
def test_url_parser_accepts_only_absolute_http_urls(text: str) -> None:
    try:
        url = _parse(text)
    except ValueError:
        return
    assert url.scheme in ("http", "https")
    assert url.host


async def test_a_fetched_page_is_labelled_with_its_url_in_the_data_flow_ledger(
    server: str,
) -> None:
    # covers G-91: the provenance of web content is the URL it was read from
    from bastion.security import DataFlowPolicy, SecurityConfig

    model = ScriptedModel([Turn(tool_calls=[Call("web_fetch", {"url": f"{server}/page"})]), "ok"])
    agent = Agent(
        "reader",
        model=model,
        tools=[web_fetch_tool(allow=LOCAL)],
        security=SecurityConfig(dataflow=DataFlowPolicy()),
    )
    result = await agent.run("Read the orders page.")
    assert result.state is not None
    assert result.state.dataflow is not None
    [user, page] = result.state.dataflow.records
    assert user.provenance.trust == "user"
    assert (page.provenance.source, page.provenance.kind, page.provenance.trust) == (
        f"{server}/page",
        "web",
        "untrusted",
    )
    assert "Order 1042 & 1043 shipped." in page.text
