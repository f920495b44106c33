"""``create_app(temporal=...)``: runs served over HTTP as workflows, on a real dev server."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest
from temporalio.testing import WorkflowEnvironment

from bastion import UserError
from bastion.distributed import TemporalAgent
from bastion.server import create_app
from tests.server._agents import Sse, read_sse
from tests.server.conftest import client, running

from ._agents import adder, mailer
from ._governed import spender


async def _events(http: httpx.AsyncClient, run_id: str, after: int | None = None) -> list[Sse]:
    headers = {} if after is None else {"Last-Event-ID": str(after)}
    async with http.stream("GET", f"/runs/{run_id}/events", headers=headers) as response:
        return await read_sse(response)


async def test_a_workflow_run_streams_parks_and_is_approved_over_http(
    dev_server: WorkflowEnvironment, tmp_path: Path
) -> None:
    store = f"sqlite:///{tmp_path}/bastion.db"
    temporal = dev_server.client
    worker = TemporalAgent(mailer(), events=store)  # as `bastion worker` would, on the store
    auth = {"t-acme": "acme", "t-globex": "globex"}
    app = create_app(mailer(), store=store, temporal=temporal, auth=auth)
    async with (
        running(app),
        client(app, "t-acme") as http,
        client(app, "t-globex") as other,
    ):
        async with worker.worker(temporal):
            started = await http.post("/runs", json={"input": "Mail Bob"})
            assert started.status_code == 202, started.text
            run_id = started.json()["run_id"]
            assert run_id.startswith("mailer-")
            first = await _events(http, run_id)
            assert [e.id for e in first] == list(range(1, len(first) + 1))
            assert (first[0].event, first[-1].event) == ("agent.start", "agent.end")
            assert first[-1].data["status"] == "awaiting_approval"
            middle = first[len(first) // 2].id
            assert await _events(http, run_id, after=middle) == first[middle:]  # Last-Event-ID

            pending = (await http.get(f"/runs/{run_id}/approvals")).json()
            assert [(p["tool_name"], p["arguments"]) for p in pending] == [
                ("send_email", {"to": "bob@example.com", "body": "Hi"})
            ]
            assert [p["id"] for p in (await http.get("/approvals")).json()] == [pending[0]["id"]]
            view = (await http.get(f"/runs/{run_id}")).json()
            assert (view["status"], view["agent"], view["tenant_id"]) == (
                "awaiting_approval", "mailer", "acme",
            )  # fmt: skip
            # another tenant sees nothing of it, and cannot decide it
            assert (await other.get(f"/runs/{run_id}")).status_code == 404
            assert (await other.get(f"/runs/{run_id}/events")).status_code == 404
            assert (await other.get("/approvals")).json() == []
            stolen = await other.post(
                f"/runs/{run_id}/approvals/{pending[0]['id']}/approve", json={}
            )
            assert stolen.status_code == 404
            wrong = await http.post(f"/runs/{run_id}/approvals/call_nope/approve", json={})
            assert wrong.status_code == 400
            assert "No call 'call_nope' is waiting" in wrong.json()["error"]["message"]
            nothing = await http.post(f"/runs/{run_id}/resume", json={})
            assert nothing.status_code == 400
            refused = await http.post(
                f"/runs/{run_id}/resume",
                json={"approvals": [{"tool_call_id": "call_nope", "granted": True}]},
            )
            assert refused.status_code == 400
            decided = await http.post(
                f"/runs/{run_id}/approvals/{pending[0]['id']}/approve", json={}
            )
            assert decided.status_code == 202, decided.text
            assert (decided.json()["resumed"], decided.json()["undecided"]) == (True, [])
            rest = await _events(http, run_id, after=first[-1].id)
            assert [e.id for e in first + rest] == list(range(1, len(first) + len(rest) + 1))
            assert [e.event for e in rest][:2] == ["agent.start", "tool.approval.resolved"]
            assert (rest[-1].event, rest[-1].data["status"]) == ("agent.end", "completed")

            done = (await http.get(f"/runs/{run_id}")).json()
            assert (done["status"], done["output"], done["pending"]) == ("completed", "Done.", [])
            traced = (await http.get(f"/runs/{run_id}/trace")).json()  # the console's waterfall
            [root] = traced["spans"]
            assert (root["kind"], root["name"], root["status"]) == ("run", "mailer", "completed")
            [first_step, second_step] = root["children"]
            assert [c["kind"] for c in first_step["children"]] == ["model", "tool"]
            assert first_step["children"][1]["name"] == "send_email"
            assert second_step["status"] == "ok"
            assert (await other.get(f"/runs/{run_id}/trace")).status_code == 404
            assert (await http.get("/runs/nope")).status_code == 404
            refused = await http.post("/runs", json={"input": "x", "session_id": "s"})
            assert refused.status_code == 400
        # with no worker left, the stream still replays from the store
        replayed = await _events(http, run_id, after=2)
        assert [e.id for e in replayed] == list(range(3, len(first) + len(rest) + 1))


def test_create_app_refuses_a_bad_temporal_target(tmp_path: Path) -> None:
    store = f"sqlite:///{tmp_path}/bastion.db"
    with pytest.raises(UserError, match="temporal must be an address"):
        create_app(mailer(), store=store, temporal=7233)  # type: ignore[arg-type]
    with pytest.raises(UserError, match="temporal must be an address"):
        create_app(mailer(), store=store, temporal="")


async def test_a_budget_interrupt_is_listed_raised_and_denied_over_http(
    time_skipping: WorkflowEnvironment, tmp_path: Path
) -> None:
    store = f"sqlite:///{tmp_path}/bastion.db"
    temporal = time_skipping.client
    worker = spender("bastion.spender", store)  # counts its budget in the served store
    app = create_app(worker.agent, store=store, temporal=temporal)
    async with running(app), client(app) as http, worker.worker(temporal):
        parked: list[str] = []
        for _ in range(2):  # one run to raise, one to deny
            started = await http.post("/runs", json={"input": "Is tea in stock?"})
            assert started.status_code == 202, started.text
            run_id = str(started.json()["run_id"])
            await worker.settle(temporal, run_id)
            parked.append(run_id)
        raised_run, denied_run = parked
        [item] = (await http.get(f"/runs/{raised_run}/approvals")).json()
        assert (item["kind"], item["limit"]["limit_type"], item["limit"]["max"]) == (
            "interrupt", "cost", 0.5,
        )  # fmt: skip
        assert item["limit"]["approvers"] == ["human:cfo"]
        missing = await http.post(f"/runs/{raised_run}/approvals/int_nope/raise", json={"max": 2})
        assert missing.status_code == 404
        raised = await http.post(
            f"/runs/{raised_run}/approvals/{item['id']}/raise", json={"max": 5}
        )
        assert raised.status_code == 202, raised.text
        assert (raised.json()["resumed"], raised.json()["undecided"]) == (True, [])
        done = await worker.result(temporal, raised_run)
        assert (done.status, done.output) == ("completed", "Tea is in stock.")

        [other] = (await http.get(f"/runs/{denied_run}/approvals")).json()
        denied = await http.post(
            f"/runs/{denied_run}/approvals/{other['id']}/deny", json={"reason": "Too dear."}
        )
        assert denied.status_code == 202, denied.text
        refused = await worker.result(temporal, denied_run)
        assert refused.status == "failed"
        assert refused.error is not None
        assert refused.error.code == "policy_denied"


async def test_a_parked_workflow_run_is_cancelled_over_http(
    dev_server: WorkflowEnvironment, tmp_path: Path
) -> None:
    store = f"sqlite:///{tmp_path}/bastion.db"
    temporal = dev_server.client
    worker = TemporalAgent(mailer(), events=store)
    app = create_app(mailer(), store=store, temporal=temporal, auth={"t-acme": "acme", "x": "x"})
    async with (
        running(app),
        client(app, "t-acme") as http,
        client(app, "x") as other,
        worker.worker(temporal),
    ):
        run_id = (await http.post("/runs", json={"input": "Mail Bob"})).json()["run_id"]
        parked = await _events(http, run_id)
        assert parked[-1].data["status"] == "awaiting_approval"
        assert (await other.post(f"/runs/{run_id}/cancel")).status_code == 404
        cancelled = await http.post(f"/runs/{run_id}/cancel")
        assert cancelled.status_code == 202, cancelled.text
        rest = await _events(http, run_id, after=parked[-1].id)
        assert (rest[-1].event, rest[-1].data["status"]) == ("agent.end", "aborted")
        view = (await http.get(f"/runs/{run_id}")).json()
        assert (view["status"], view["pending"], view["error"]["code"]) == (
            "aborted",
            [],
            "run_aborted",
        )
        again = await http.post(f"/runs/{run_id}/cancel")
        assert again.status_code == 404
        assert "not in flight" in again.json()["error"]["message"]


async def test_the_run_list_holds_the_workflows_and_the_local_session_runs(
    dev_server: WorkflowEnvironment, tmp_path: Path
) -> None:
    store = f"sqlite:///{tmp_path}/bastion.db"
    temporal = dev_server.client
    workers = [TemporalAgent(mailer(), events=store), TemporalAgent(adder(), events=store)]
    auth = {"t-acme": "acme", "t-globex": "globex"}
    served = {"mailer": mailer(), "adder": adder()}
    app = create_app(served, store=store, temporal=temporal, auth=auth)
    async with (
        running(app),
        client(app, "t-acme") as http,
        client(app, "t-globex") as other,
        workers[0].worker(temporal),
        workers[1].worker(temporal),
    ):
        mailed = await _started(http, "mailer", "Mail Bob")  # parks
        added = await _started(http, "adder", "Add")
        theirs = await _started(other, "adder", "Add")
        session = (await http.post("/sessions", json={"agent": "adder"})).json()["session_id"]
        await http.post(f"/sessions/{session}/messages", json={"text": "Add"})
        async with http.stream("GET", f"/sessions/{session}/events") as turn:
            await read_sse(turn)  # until the session settles
        [local] = (await http.get(f"/sessions/{session}")).json()["runs"]

        listed = (await http.get("/runs")).json()
        assert [r["run_id"] for r in listed["runs"]] == [local, added, mailed]  # newest first
        assert [r["status"] for r in listed["runs"]] == [
            "completed",
            "completed",
            "awaiting_approval",
        ]
        assert listed["next_offset"] is None
        assert [r["run_id"] for r in (await other.get("/runs")).json()["runs"]] == [theirs]
        parked = (await http.get("/runs", params={"status": "awaiting_approval"})).json()
        assert [(r["run_id"], r["pending"][0]["tool_name"]) for r in parked["runs"]] == [
            (mailed, "send_email")
        ]
        by_agent = (await http.get("/runs", params={"agent": "mailer"})).json()
        assert [r["run_id"] for r in by_agent["runs"]] == [mailed]
        first = (await http.get("/runs", params={"limit": 2})).json()
        second = (await http.get("/runs", params={"limit": 2, "offset": 2})).json()
        assert (first["next_offset"], second["next_offset"]) == (2, None)
        assert [r["run_id"] for r in first["runs"] + second["runs"]] == [local, added, mailed]
        too_deep = await http.get("/runs", params={"offset": 10_001})
        assert too_deep.status_code == 400
        assert "offset may be at most 10000" in too_deep.json()["error"]["message"]

        [call] = parked["runs"][0]["pending"]  # every decision at once, as for a local run
        body = {"approvals": [{"tool_call_id": call["id"], "granted": True}]}
        before = await _events(http, mailed)  # up to the agent.end of its parking
        resumed = await http.post(f"/runs/{mailed}/resume", json=body)
        assert (resumed.status_code, resumed.json()["undecided"]) == (202, [])
        ended = await _events(http, mailed, after=before[-1].id)
        assert (ended[-1].event, ended[-1].data["status"]) == ("agent.end", "completed")
        assert (await http.get(f"/runs/{mailed}")).json()["output"] == "Done."


async def _started(http: httpx.AsyncClient, agent: str, text: str) -> str:
    """Start a run of ``agent``; its id once its events ended (it ended or parked)."""
    started = await http.post("/runs", json={"agent": agent, "input": text})
    assert started.status_code == 202, started.text
    run_id: str = started.json()["run_id"]
    await _events(http, run_id)
    return run_id


async def test_a_run_no_worker_answers_for_is_listed_as_running(
    dev_server: WorkflowEnvironment, tmp_path: Path
) -> None:
    store = f"sqlite:///{tmp_path}/bastion.db"
    app = create_app(mailer(), store=store, temporal=dev_server.client)
    async with running(app), client(app) as http:  # and no worker at all
        started = await http.post("/runs", json={"input": "Mail Bob"})
        run_id = started.json()["run_id"]
        listed = await http.get("/runs")
        approvals = await http.get("/approvals")
        one = await http.get(f"/runs/{run_id}")
    assert (one.status_code, approvals.status_code, approvals.json()) == (503, 200, [])
    assert "No worker answered" in one.json()["error"]["message"]
    assert listed.status_code == 200, listed.text
    assert [(r["run_id"], r["status"], r["pending"]) for r in listed.json()["runs"]] == [
        (run_id, "running", [])
    ]
