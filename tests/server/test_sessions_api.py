"""Session endpoints in process on real SQLite and PostgreSQL stores.

Send, stream, steer, queue, approvals, history, tenants, reconnection, a second server.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from typing import Any

import httpx

from bastion import Agent
from bastion.core import ModelRequest, UserMessage
from bastion.server import EventLog, LoggedEvent, create_app
from bastion.stores import open_store
from bastion.testing import FunctionModel

from ._agents import SENT, Sse, ids, mailer, parse_sse
from ._console import analyst
from .conftest import client, running

AUTH = {"token-acme": "acme", "token-globex": "globex"}


async def _events(
    http: httpx.AsyncClient, session_id: str, *, after: int | None = None
) -> list[Sse]:
    """The session's events after ``after`` until its stream ends (the session settles)."""
    headers = {} if after is None else {"Last-Event-ID": str(after)}
    async with http.stream("GET", f"/sessions/{session_id}/events", headers=headers) as response:
        assert response.status_code == 200
        return [sse async for sse in parse_sse(response.aiter_lines())]


async def _create(http: httpx.AsyncClient, **body: Any) -> str:
    response = await http.post("/sessions", json=body)
    assert response.status_code == 201, response.text
    return response.json()["session_id"]


async def _send(
    http: httpx.AsyncClient, session_id: str, text: str, mode: str | None = None
) -> Any:
    body = {"text": text} if mode is None else {"text": text, "mode": mode}
    response = await http.post(f"/sessions/{session_id}/messages", json=body)
    assert response.status_code == 202, response.text
    return response.json()


async def test_a_session_turn_waits_for_approval_and_finishes(store_url: str) -> None:
    # covers G-07
    SENT.clear()
    app = create_app({"mailer": mailer()}, store=store_url, auth=AUTH)
    async with running(app), client(app, "token-acme") as http:
        session_id = await _create(http, session_id="chat-1")
        assert (await http.post("/sessions", json={"session_id": "chat-1"})).status_code == 409
        await _send(http, session_id, "Mail Bob")
        first = await _events(http, session_id)
        types = [e.event for e in first]
        assert types[:3] == ["run", "message", "text_delta"]  # the run is named before its message
        assert first[1].data["message"]["content"] == "Mail Bob"
        assert ("tool_call", "look_up") in [(e.event, e.data.get("tool_name")) for e in first]
        assert first[-2].event == "approval_requested"
        assert first[-2].data["tool_name"] == "send_email"
        assert first[-1].data["status"] == "waiting"
        assert ids(first) == list(range(1, len(first) + 1))

        view = (await http.get(f"/sessions/{session_id}")).json()
        assert view["status"] == "waiting"
        assert view["tenant_id"] == "acme"
        [item] = view["pending"]
        assert (item["tool_name"], item["arguments"]["to"]) == ("send_email", "bob@example.com")
        assert view["runs"] == [first[0].data["run_id"]]

        decided = await http.post(f"/sessions/{session_id}/approvals/{item['id']}/approve", json={})
        assert decided.status_code == 202, decided.text
        rest = await _events(http, session_id, after=first[-1].id)
        assert rest[-2].data["text"] == "Done: sent to bob@example.com"
        assert rest[-1].data["status"] == "idle"
        assert SENT == ["bob@example.com"]
        assert ids(first + rest) == list(range(1, len(first) + len(rest) + 1))
        runs = [e.data for e in first + rest if e.event == "run"]
        assert [r["resumed"] for r in runs] == [False, True]
        assert len({r["run_id"] for r in runs}) == 1

        again = await _events(http, session_id, after=3)  # a reconnection
        assert again == (first + rest)[3:]

        history = (await http.get(f"/sessions/{session_id}/messages")).json()["messages"]
        assert [m["role"] for m in history] == [
            "user", "assistant", "tool", "assistant", "tool", "assistant"
        ]  # fmt: skip
        run = (await http.get(f"/runs/{view['runs'][0]}")).json()  # the turn is a run too
        assert (run["status"], run["session_id"], run["tenant_id"]) == (
            "completed", session_id, "acme"
        )  # fmt: skip


async def test_another_tenant_gets_404_and_lists_only_its_own(sqlite_url: str) -> None:
    app = create_app(mailer(), store=sqlite_url, auth=AUTH)
    async with (
        running(app),
        client(app, "token-acme") as acme,
        client(app, "token-globex") as globex,
    ):
        mine = await _create(acme)
        theirs = await _create(globex)
        for path in ("", "/messages", "/events"):
            response = await globex.get(f"/sessions/{mine}{path}")
            assert response.status_code == 404, path
            assert mine not in response.text or "No session" in response.text
        sent = await globex.post(f"/sessions/{mine}/messages", json={"text": "hi"})
        assert sent.status_code == 404
        listed = (await acme.get("/sessions")).json()["sessions"]
        assert [s["session_id"] for s in listed] == [mine]
        assert [s["session_id"] for s in (await globex.get("/sessions")).json()["sessions"]] == [
            theirs
        ]
        assert (await acme.get("/sessions/nope")).status_code == 404
        bad = await acme.post(f"/sessions/{mine}/messages", json={"text": "x", "mode": "shout"})
        assert bad.status_code == 422


def _echo(streaming: asyncio.Event, gate: asyncio.Event) -> Agent[None, str]:
    """Streams 'Thinking about <first message>', sets ``streaming``, waits on ``gate``,
    then answers to the last user message; each later request answers at once.
    """

    async def answer(request: ModelRequest) -> AsyncIterator[str]:
        users = [m.text for m in request.messages if isinstance(m, UserMessage)]
        if len(users) == 1 and not gate.is_set():
            yield f"Thinking about {users[0]}. "
            streaming.set()
            await gate.wait()
        yield f"Answer to {users[-1]} (after {len(users)} user messages)."

    return Agent("echo", model=FunctionModel(stream_function=answer))


async def test_steer_and_queue_while_a_turn_streams(sqlite_url: str) -> None:
    streaming, gate = asyncio.Event(), asyncio.Event()
    app = create_app(_echo(streaming, gate), store=sqlite_url)
    async with running(app), client(app) as http:
        session_id = await _create(http)
        await _send(http, session_id, "tides")
        await streaming.wait()  # the first answer is half streamed
        assert (await http.get(f"/sessions/{session_id}")).json()["status"] == "running"

        queued = await _send(http, session_id, "and the moon?", mode="queue")
        steered = await _send(http, session_id, "only spring tides", mode="steer")
        assert (queued["status"], steered["status"]) == ("pending", "pending")
        gate.set()
        seen = await _events(http, session_id)
        said = [
            e.data["message"]["content"]
            for e in seen
            if e.event == "message" and e.data["role"] == "user"
        ]
        # The steering message is the next turn of the loop (it came after the turn's last
        # model call), before the queued one.
        assert said == ["tides", "only spring tides", "and the moon?"]
        deltas = "".join(e.data["delta"] for e in seen if e.event == "text_delta")
        assert deltas.startswith("Thinking about tides. Answer to tides")
        answers = [e.data["text"] for e in seen if e.event == "turn_end"]
        assert answers == ["Answer to and the moon? (after 3 user messages)."]
        assert seen[-1].event == "idle"
        view = (await http.get(f"/sessions/{session_id}")).json()
        assert (view["status"], view["messages"], len(view["runs"])) == ("idle", 6, 3)


async def test_a_second_server_on_the_store_reopens_the_session(store_url: str) -> None:
    first = create_app(mailer(), store=store_url, auth=AUTH)
    async with running(first), client(first, "token-acme") as http:
        session_id = await _create(http, send_mode="queue")
        await _send(http, session_id, "Mail Bob")
        seen = await _events(http, session_id)
    second = create_app(mailer(), store=store_url, auth=AUTH)
    async with running(second), client(second, "token-acme") as http:
        view = (await http.get(f"/sessions/{session_id}")).json()
        assert (view["status"], view["send_mode"]) == ("waiting", "queue")
        [item] = view["pending"]
        denied = await http.post(
            f"/sessions/{session_id}/approvals/{item['id']}/deny", json={"reason": "not today"}
        )
        assert denied.status_code == 202, denied.text
        rest = await _events(http, session_id, after=seen[-1].id)
        assert rest[0].id == seen[-1].id + 1  # the numbers go on from the store
        results = [e.data for e in rest if e.event == "tool_result"]
        assert results[0]["is_error"] is True
        assert "not today" in results[0]["result"]
        assert (
            await http.post(f"/sessions/{session_id}/approvals/x/approve", json={})
        ).status_code == 404


async def test_openapi_describes_the_session_endpoints(sqlite_url: str) -> None:
    app = create_app(mailer(), store=sqlite_url)
    async with running(app), client(app) as http:
        paths = (await http.get("/openapi.json")).json()["paths"]
    assert {
        "/sessions",
        "/sessions/{session_id}",
        "/sessions/{session_id}/messages",
        "/sessions/{session_id}/events",
        "/sessions/{session_id}/abort",
        "/sessions/{session_id}/approvals/{item_id}/approve",
        "/sessions/{session_id}/approvals/{item_id}/deny",
        "/sessions/{session_id}/approvals/{item_id}/raise",
    } <= set(paths)


async def test_a_session_turn_stopped_by_a_budget_goes_on_once_it_is_raised(
    sqlite_url: str,
) -> None:
    app = create_app(analyst(), store=sqlite_url)
    async with running(app), client(app) as http:
        session_id = await _create(http)
        await _send(http, session_id, "Read both pages")
        first = await _events(http, session_id)
        assert [e.event for e in first][-2:] == ["interrupt_requested", "idle"]
        [item] = (await http.get(f"/sessions/{session_id}")).json()["pending"]
        assert (item["kind"], item["limit"]["limit_type"], item["limit"]["max"]) == (
            "interrupt", "cost", 10
        )  # fmt: skip
        low = await http.post(
            f"/sessions/{session_id}/approvals/{item['id']}/raise", json={"max": -1}
        )
        assert low.status_code == 422
        raised = await http.post(
            f"/sessions/{session_id}/approvals/{item['id']}/raise", json={"max": 30}
        )
        assert raised.status_code == 202, raised.text
        rest = await _events(http, session_id, after=first[-1].id)
        assert [e.data["text"] for e in rest if e.event == "turn_end"] == ["Both pages read."]
        assert (await http.get(f"/sessions/{session_id}")).json()["pending"] == []


async def test_abort_stops_the_turn_in_flight(sqlite_url: str) -> None:
    streaming, gate = asyncio.Event(), asyncio.Event()
    app = create_app(_echo(streaming, gate), store=sqlite_url)
    async with running(app), client(app) as http:
        session_id = await _create(http)
        await _send(http, session_id, "tides")
        await streaming.wait()
        aborted = await http.post(f"/sessions/{session_id}/abort")
        assert aborted.status_code == 200, aborted.text
        seen = await _events(http, session_id)
        errors = [e.data for e in seen if e.event == "error"]
        assert [(e["error"], e["aborted"]) for e in errors] == [("TurnAborted", True)]
        assert (seen[-1].event, seen[-1].data["status"]) == ("idle", "idle")
        await _send(http, session_id, "again")  # the session takes the next message
        again = await _events(http, session_id, after=seen[-1].id)
        assert [e.data["text"] for e in again if e.event == "turn_end"] == [
            "Answer to again (after 2 user messages)."
        ]


async def test_a_session_whose_log_stops_mid_turn_settles_when_reopened(sqlite_url: str) -> None:
    first = create_app(mailer(), store=sqlite_url)
    async with running(first), client(first) as http:
        session_id = await _create(http)
    cut = {"seq": 1, "session_id": session_id, "type": "text_delta", "delta": "Half"}
    async with open_store(sqlite_url) as stores:  # a server that died mid-turn wrote this
        log = EventLog(stores.artifacts)
        await log.append(
            f"session:{session_id}", [LoggedEvent(seq=1, type="text_delta", data=json.dumps(cut))]
        )
    second = create_app(mailer(), store=sqlite_url)
    async with running(second), client(second) as http:
        seen = await _events(http, session_id)  # ends: the session is idle here
    assert [(e.id, e.event) for e in seen] == [(1, "text_delta"), (2, "idle")]
    assert seen[-1].data["status"] == "idle"
