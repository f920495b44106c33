"""The secrets vault: reveal only inside allowed tool calls, redaction everywhere a secret
could leak, sources and rotation, sub-agent inheritance; secret-named keys in a serialised
run state (SPEC §3.1 scenario 38)."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest

from bastion import Agent, run_state_from_json, run_state_to_json, tool
from bastion.agent import ToolOptions
from bastion.core import ToolMessage, UserError
from bastion.security import (
    REDACTED,
    DataFlowPolicy,
    SecretAccessError,
    SecretInheritance,
    SecretRef,
    SecurityConfig,
    Vault,
    callable_secret,
    env_secret,
    file_secret,
    redact_secret_keys,
)
from bastion.stores import open_store
from bastion.testing import Call, ScriptedModel, Turn
from bastion.tools import ToolCallRequest

KEY = "sk-live-4f9a8b7c6d5e"


@tool(side_effect_class="read_only", secrets_allowed=["stripe"])
def charge_status() -> str:
    """Ask the payment API how it is doing (the tool echoes its key, as a buggy tool may)."""
    key = SecretRef("stripe").reveal()
    return f"connected with key {key}: all good"


@tool(side_effect_class="read_only", secrets_allowed=["stripe"])
def failing_call() -> str:
    """A tool whose exception message carries the key."""
    key = SecretRef("stripe").reveal()
    raise RuntimeError(f"401 Unauthorized for key {key}")


@tool(side_effect_class="read_only")
def sneaky() -> str:
    """A tool not allowed the secret."""
    return SecretRef("stripe").reveal()


def dump(value: Any) -> str:
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        value = dataclasses.asdict(value)
    return json.dumps(value, default=repr)


async def test_a_revealed_secret_reaches_no_model_text_event_journal_or_state() -> None:
    # covers G-23, T-08
    model = ScriptedModel(
        [
            Turn(tool_calls=[Call("charge_status", {}, id="c1")]),
            Turn(tool_calls=[Call("failing_call", {}, id="c2")]),
            "done",
        ]
    )
    async with open_store("memory://") as stores:
        agent = Agent(
            "payer",
            model=model,
            tools=[charge_status, failing_call],
            store=stores,
            security=SecurityConfig(vault=Vault({"stripe": callable_secret(lambda: KEY)})),
        )
        events = [e async for e in agent.stream("How is the payment API?")]
        run_id = events[0].run_id
        journal = await stores.journal.read(run_id)
    contents = [m.content for m in model.requests[-1].messages if isinstance(m, ToolMessage)]
    assert contents[0] == "connected with key [secret:stripe]: all good"
    assert "401 Unauthorized for key [secret:stripe]" in str(contents[1])
    everything = [
        *map(dump, events),
        *(dump(e.payload) for e in journal),
        *map(dump, model.requests),
    ]
    assert all(KEY not in text for text in everything)
    assert any("[secret:stripe]" in text for text in everything)


async def test_only_allowed_tools_and_tool_calls_may_reveal_a_secret() -> None:
    # covers G-23, T-08
    model = ScriptedModel([Turn(tool_calls=[Call("sneaky", {}, id="c1")]), "done"])
    agent = Agent(
        "a",
        model=model,
        tools=[sneaky],
        security=SecurityConfig(vault=Vault({"stripe": callable_secret(lambda: KEY)})),
    )
    result = await agent.run("go")
    [message] = [m for m in result.messages if isinstance(m, ToolMessage)]
    assert message.is_error
    assert "may not use secret 'stripe'" in str(message.content)
    assert KEY not in str(message.content)
    with pytest.raises(SecretAccessError, match="only be revealed inside a tool call"):
        SecretRef("stripe").reveal()
    assert repr(SecretRef("stripe")) == "SecretRef('stripe')"


def test_a_tool_allowed_a_secret_the_vault_lacks_is_a_config_error() -> None:
    # covers G-23
    with pytest.raises(UserError, match=r"tool 'charge_status' is allowed secret.*'stripe'"):
        Agent(
            "a",
            model=ScriptedModel(["x"]),
            tools=[charge_status],
            security=SecurityConfig(vault=Vault({"other": "OTHER_KEY"})),
        )


async def test_sources_env_file_and_callable_and_rotation_without_restart(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # covers T-08
    monkeypatch.setenv("STRIPE_KEY", "first-env-value")
    path = tmp_path / "key.txt"
    path.write_text("file-value-1\n")
    vault = Vault({"stripe": env_secret("STRIPE_KEY"), "disk": file_secret(path)})
    seen: list[str] = []

    @tool(side_effect_class="read_only", secrets_allowed=["stripe", "disk"])
    def probe() -> str:
        values = (SecretRef("stripe").reveal(), SecretRef("disk").reveal())
        seen.extend(values)
        return " ".join(values)

    def rotate_before_the_second_call(request: ToolCallRequest) -> None:
        if request.call.id == "c1":  # rotated while the agent runs
            monkeypatch.setenv("STRIPE_KEY", "second-env-value")
            path.write_text("file-value-2")

    calls = [Turn(tool_calls=[Call("probe", {}, id=f"c{i}")]) for i in range(2)]
    agent = Agent(
        "a",
        model=ScriptedModel([*calls, "done"]),
        tools=[probe],
        security=SecurityConfig(vault=vault),
        tool_options=ToolOptions(before_call=[rotate_before_the_second_call]),
    )
    result = await agent.run("probe twice")
    assert seen == ["first-env-value", "file-value-1", "second-env-value", "file-value-2"]
    texts = [str(m.content) for m in result.messages if isinstance(m, ToolMessage)]
    assert texts == ["[secret:stripe] [secret:disk]"] * 2
    with pytest.raises(SecretAccessError, match="'MISSING' is not set"):
        env_secret("MISSING").read()


def test_sub_agent_inheritance_modes() -> None:
    # covers G-57 (API only)
    values = iter(["value-1", "value-2", "value-3"])
    parent = Vault({"a": callable_secret(lambda: next(values)), "b": callable_secret(lambda: "b")})
    assert SecretInheritance().child_vault(parent) is None  # inherits nothing by default
    inherited = SecretInheritance(mode="inherit", names=("a",)).child_vault(parent)
    assert inherited is not None
    assert inherited.names == ("a",)
    assert inherited.reveal("a") == "value-1"  # the parent's source: rotation applies
    forwarded = SecretInheritance(mode="forward", names=("a",)).child_vault(parent)
    assert forwarded is not None
    assert [forwarded.reveal("a"), forwarded.reveal("a")] == ["value-2", "value-2"]  # a snapshot
    own = Vault({"c": callable_secret(lambda: "c")})
    isolated = SecretInheritance(mode="isolated", own=own).child_vault(parent)
    assert isolated is own
    with pytest.raises(UserError, match="isolated"):
        SecretInheritance(mode="isolated", names=("a",))
    assert parent.redact("value-1 and value-2") == "[secret:a] and [secret:a]"  # one redaction set


async def test_a_used_secret_counts_for_the_lethal_trifecta() -> None:
    # covers G-93: untrusted content + a vault secret + a sink
    @tool(side_effect_class="read_only", trust_class="web_search")
    def fetch() -> str:
        """Read a web page."""
        return "A page."

    @tool(side_effect_class="side_effecting")
    def post(url: str) -> str:
        """Post somewhere."""
        return "posted"

    model = ScriptedModel(
        [
            Turn(tool_calls=[Call("fetch", {}, id="f1")]),
            Turn(tool_calls=[Call("charge_status", {}, id="c1")]),
            Turn(tool_calls=[Call("post", {"url": "https://corp.example/hook"}, id="p1")]),
            "done",
        ]
    )
    security = SecurityConfig(
        vault=Vault({"stripe": callable_secret(lambda: KEY)}),
        dataflow=DataFlowPolicy(mode="enforce", allowlist=["corp.example"]),
    )
    agent = Agent("a", model=model, tools=[fetch, charge_status, post], security=security)
    result = await agent.run("go")
    [record] = [r for r in result.tool_calls if r.id == "p1"]
    assert record.error_kind == "dataflow_policy_blocked"
    assert result.state is not None
    assert result.state.dataflow is not None
    assert result.state.dataflow.secrets_used == ["stripe"]


async def test_scenario_38_secret_named_keys_are_redacted_in_a_serialised_run_state() -> None:
    # §3.1 scenario 38: secret-named keys redacted in a serialised run state
    model = ScriptedModel(["hello"])
    agent = Agent("a", model=model)
    metadata = {
        "api_key": "k-123",
        "customer": {"name": "Ann", "password": "hunter2", "X-Auth-Token": "t"},
        "tokens": 3,
        "idempotency_key": "keep-me",
    }
    result = await agent.run("hi", metadata=metadata)
    assert result.state is not None
    text = run_state_to_json(result.state)
    for secret in ("k-123", "hunter2", '"t"'):
        assert secret not in text
    loaded = run_state_from_json(text)
    assert loaded.metadata == {
        "api_key": REDACTED,
        "customer": {"name": "Ann", "password": REDACTED, "X-Auth-Token": REDACTED},
        "tokens": 3,
        "idempotency_key": "keep-me",
    }
    assert result.state.metadata["api_key"] == "k-123"  # the live state is untouched
    assert redact_secret_keys([{"client_secret": "s", "usage": {"input_tokens": 4}}]) == [
        {"client_secret": REDACTED, "usage": {"input_tokens": 4}}
    ]
