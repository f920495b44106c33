"""The HTTP API in process (httpx's ASGI transport) on real SQLite and PostgreSQL stores."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx

from bastion import Agent
from bastion.core import ModelRequest, ToolMessage
from bastion.multi import as_tool
from bastion.server import create_app
from bastion.testing import Call, FunctionModel, Turn

from ._agents import SENT, Sse, ids, mailer, read_sse
from .conftest import client, running

AUTH = {"token-acme": "acme", "token-globex": "globex"}


async def _events(http: httpx.AsyncClient, run_id: str, after: int | None = None) -> list[Sse]:
    headers = {} if after is None else {"Last-Event-ID": str(after)}
    async with http.stream("GET", f"/runs/{run_id}/events", headers=headers) as response:
        return await read_sse(response)


async def _start(http: httpx.AsyncClient, **body: Any) -> str:
    response = await http.post("/runs", json={"agent": "mailer", "input": "Mail Bob", **body})
    assert response.status_code == 202, response.text
    return response.json()["run_id"]


async def test_a_run_suspends_streams_resumes_and_finishes(store_url: str) -> None:
    # covers G-07
    SENT.clear()
    app = create_app({"mailer": mailer()}, store=store_url, auth=AUTH)
    async with running(app), client(app, "token-acme") as http:
        run_id = await _start(http, metadata={"ticket": 7})
        first = await _events(http, run_id)
        assert first[-1].event == "agent.end"
        assert first[-1].data["status"] == "awaiting_approval"
        assert ids(first) == list(range(1, len(first) + 1))

        middle = first[len(first) // 2].id
        again = await _events(http, run_id, after=middle)
        assert again == first[middle:]  # from the store: nothing missed, nothing repeated

        pending = (await http.get(f"/runs/{run_id}/approvals")).json()
        assert [(p["kind"], p["tool_name"], p["arguments"]) for p in pending] == [
            ("call", "send_email", {"to": "bob@example.com", "body": "Hi Bob"})
        ]
        assert [p["id"] for p in (await http.get("/approvals")).json()] == [pending[0]["id"]]
        assert SENT == []

        decided = await http.post(f"/runs/{run_id}/approvals/{pending[0]['id']}/approve", json={})
        assert decided.status_code == 202, decided.text
        rest = await _events(http, run_id, after=first[-1].id)
        assert ids(first + rest) == list(range(1, len(first) + len(rest) + 1))
        assert rest[-1].event == "agent.end"
        assert rest[-1].data["status"] == "completed"
        assert SENT == ["bob@example.com"]

        view = (await http.get(f"/runs/{run_id}")).json()
        assert view["status"] == "completed"
        assert view["output"] == "Done: sent to bob@example.com"
        assert (view["tenant_id"], view["metadata"], view["pending"]) == ("acme", {"ticket": 7}, [])

        export = await http.get(f"/runs/{run_id}/export")
        kinds = [line.split('"kind": "')[1].split('"')[0] for line in export.text.splitlines()]
        assert kinds[0] == "run_started"
        assert kinds[-1] == "run_ended"
        assert "interrupt_decided" in kinds


async def test_another_tenant_gets_404_and_never_data(sqlite_url: str) -> None:
    app = create_app(mailer(), store=sqlite_url, auth=AUTH)
    async with (
        running(app),
        client(app, "token-acme") as acme,
        client(app, "token-globex") as globex,
    ):
        run_id = await _start(acme)
        await _events(acme, run_id)  # suspended
        pending = (await acme.get(f"/runs/{run_id}/approvals")).json()
        call = pending[0]["id"]
        for method, path in [
            ("GET", f"/runs/{run_id}"),
            ("GET", f"/runs/{run_id}/events"),
            ("GET", f"/runs/{run_id}/approvals"),
            ("GET", f"/runs/{run_id}/export"),
            ("POST", f"/runs/{run_id}/cancel"),
            ("POST", f"/runs/{run_id}/approvals/{call}/approve"),
            ("POST", f"/runs/{run_id}/approvals/{call}/deny"),
        ]:
            response = await globex.request(method, path, json={} if method == "POST" else None)
            assert response.status_code == 404, (path, response.text)
            assert run_id in response.json()["error"]["message"]
            assert "send_email" not in response.text
        assert (await globex.get("/runs")).json() == {"runs": [], "next_offset": None}
        assert (await globex.get("/approvals")).json() == []
        assert (await globex.get("/runs", params={"tenant": "acme"})).json()["runs"] == []
        assert [r["run_id"] for r in (await acme.get("/runs")).json()["runs"]] == [run_id]
        assert (await acme.get(f"/runs/{run_id}")).json()["status"] == "awaiting_approval"
        missing = await httpx.AsyncClient(
            transport=httpx.ASGITransport(app=app), base_url="http://bastion"
        ).get("/runs")
        assert missing.status_code == 401
        assert missing.headers["www-authenticate"] == "Bearer"


async def test_bad_requests_get_a_clear_4xx_never_a_500(sqlite_url: str) -> None:
    app = create_app(mailer(), store=sqlite_url, max_body_bytes=2_000)
    async with running(app), client(app) as http:
        cases: list[tuple[httpx.Response, int, str]] = [
            (await http.post("/runs", content=b"{not json", headers=_json()), 422, "JSON"),
            (await http.post("/runs", json={"agent": "mailer"}), 422, "input"),
            (await http.post("/runs", json=[1, 2]), 422, "Invalid request"),
            (await http.post("/runs", json={"input": "x", "extra": 1}), 422, "extra"),
            (await http.post("/runs", json={"agent": "nobody", "input": "x"}), 404, "nobody"),
            (await http.post("/runs", json={"input": "x" * 5_000}), 413, "2000 bytes"),
            (await http.get("/runs/run_nope"), 404, "run_nope"),
            (await http.get("/runs", params={"status": "sleepy"}), 422, "status"),
            (await http.get("/runs", params={"limit": 0}), 422, "limit"),
            (await http.post("/runs/run_nope/resume", json={"approvals": 3}), 422, "approvals"),
        ]
        for response, status, words in cases:
            assert response.status_code == status, response.text
            assert words in response.json()["error"]["message"], response.text

        run_id = await _start(http)
        bad_id = await http.get(f"/runs/{run_id}/events", headers={"Last-Event-ID": "x"})
        assert bad_id.status_code == 400
        assert "Last-Event-ID" in bad_id.json()["error"]["message"]
        # A seq past a 64-bit integer is the client's mistake, never a database overflow.
        huge = str(2**63)
        for response in (
            await http.get(f"/runs/{run_id}/events", headers={"Last-Event-ID": huge}),
            await http.get(f"/runs/{run_id}/events", params={"after": huge}),
            await http.get("/runs", params={"offset": huge}),
        ):
            assert response.status_code in (400, 422), response.text
            assert "9223372036854775807" in response.json()["error"]["message"], response.text
        await _events(http, run_id)
        wrong = await http.post(f"/runs/{run_id}/resume", json={"approvals": []})
        assert wrong.status_code == 400, wrong.text
        assert wrong.json()["error"]["type"] == "UserError"
        unknown = await http.post(f"/runs/{run_id}/approvals/call_nope/approve", json={})
        assert unknown.status_code == 404
        assert (await http.post(f"/runs/{run_id}/cancel")).status_code == 404  # not in flight


def _json() -> dict[str, str]:
    return {"content-type": "application/json"}


async def test_a_second_server_on_the_same_store_serves_the_run(store_url: str) -> None:
    SENT.clear()
    one = create_app(mailer(), store=store_url)
    two = create_app(mailer(), store=store_url)
    async with running(one), running(two), client(one) as a, client(two) as b:
        run_id = await _start(a)
        seen = await _events(a, run_id)
        assert await _events(b, run_id) == seen
        assert await _events(b, run_id, after=3) == seen[3:]
        call = (await b.get(f"/runs/{run_id}/approvals")).json()[0]["id"]
        denied = await b.post(f"/runs/{run_id}/approvals/{call}/deny", json={"reason": "No."})
        assert denied.status_code == 202
        rest = await _events(b, run_id, after=seen[-1].id)
        assert ids(seen + rest) == list(range(1, len(seen) + len(rest) + 1))
        assert await _events(a, run_id, after=seen[-1].id) == rest
        assert rest[-1].data["status"] == "completed"
        assert SENT == []


async def test_draining_refuses_new_runs_with_503(sqlite_url: str) -> None:
    app = create_app(mailer(), store=sqlite_url, admin_token="admin")
    async with running(app), client(app) as http:
        run_id = await _start(http)
        assert (await http.post("/admin/drain")).status_code == 401
        admin = {"Authorization": "Bearer admin"}
        for _ in range(2):  # idempotent
            drained = await http.post("/admin/drain", headers=admin)
            assert drained.json() == {"status": "draining", "runs_in_flight": 0}
        refused = await http.post("/runs", json={"input": "Mail Bob"})
        assert refused.status_code == 503
        assert "shutting down" in refused.json()["error"]["message"]
        assert (await http.get("/healthz")).json()["status"] == "draining"
        view = (await http.get(f"/runs/{run_id}")).json()
        assert view["status"] == "awaiting_approval"  # the run in flight got to its suspension


async def test_openapi_schema_describes_the_api(sqlite_url: str) -> None:
    app = create_app(mailer(), store=sqlite_url)
    async with running(app), client(app) as http:
        schema = (await http.get("/openapi.json")).json()
    assert {"/runs", "/runs/{run_id}/events", "/approvals"} <= set(schema["paths"])
    assert schema["components"]["schemas"]["StartRun"]["required"] == ["input"]
    assert "ErrorBody" in schema["components"]["schemas"]


async def test_a_drain_waits_for_runs_in_flight_and_refuses_new_ones(sqlite_url: str) -> None:
    gate = asyncio.Event()
    app = create_app(mailer(gate), store=sqlite_url, admin_token="admin")
    async with running(app), client(app) as http:
        run_id = await _start(http)  # in flight: its look-up waits on the gate
        admin = {"Authorization": "Bearer admin"}
        drain = asyncio.create_task(http.post("/admin/drain", headers=admin))
        await app.state.bastion.manager.refusing.wait()
        refused = await http.post("/runs", json={"input": "Mail Bob"})
        assert refused.status_code == 503
        assert not drain.done()  # still waiting for the run in flight
        gate.set()
        assert (await drain).json() == {"status": "draining", "runs_in_flight": 0}
        assert (await http.get(f"/runs/{run_id}")).json()["status"] == "awaiting_approval"


async def test_a_parked_sub_agent_is_decided_through_its_parents_approval(sqlite_url: str) -> None:
    # covers §3.1 scenario 29 (the server API decides a child's approval through its parent)
    SENT.clear()

    def turn(request: ModelRequest) -> Turn:
        results = [m for m in request.messages if isinstance(m, ToolMessage)]
        if not results:
            return Turn(tool_calls=[Call("mailer", {"input": "Mail Bob"}, id="m1")])
        return Turn(text=f"Boss: {results[-1].text}")

    boss = Agent("boss", model=FunctionModel(turn), tools=[as_tool(mailer())])
    app = create_app({"boss": boss}, store=sqlite_url, auth=AUTH)
    async with running(app), client(app, "token-acme") as http:
        response = await http.post("/runs", json={"agent": "boss", "input": "Have Bob mailed"})
        run_id = response.json()["run_id"]
        first = await _events(http, run_id)
        assert first[-1].data["status"] == "awaiting_approval"
        [pending] = (await http.get(f"/runs/{run_id}/approvals")).json()
        assert (pending["id"], pending["tool_name"]) == ("m1", "mailer")
        assert "waits for approval of tool 'send_email'" in pending["reason"]
        assert SENT == []
        decided = await http.post(f"/runs/{run_id}/approvals/m1/approve", json={})
        assert decided.status_code == 202, decided.text
        rest = await _events(http, run_id, after=first[-1].id)
        assert rest[-1].data["status"] == "completed"
        assert SENT == ["bob@example.com"]
        view = (await http.get(f"/runs/{run_id}")).json()
        assert view["output"] == "Boss: Done: sent to bob@example.com"
