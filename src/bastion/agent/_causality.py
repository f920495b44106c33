"""Causality across agents: why did this (sub-)agent make this call?

:func:`causal_chain` answers from the journal alone, in any process: the call (the
``model_response`` that asked for it), what its agent had read before (the run's input and
every earlier tool result, with its trust and provenance), and, for a sub-agent's run, the
parent's call that delegated the task (the run's ``metadata`` links) and what *that* agent
had read, up to the root run. ``bastion runs why RUN_ID CALL_ID`` prints it.

The monitor (``as_tool(causality=...)``) works in the run: ``record`` journals, with the
child's run, the untrusted content its parent had read when it delegated (so the chain is
complete even when the parent's results are later compacted) and reports a side-effecting
call whose chain holds untrusted content as a ``governance.signal``; ``enforce`` refuses
such a call (``dataflow_policy_blocked``), and the model reads why.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal, TypeAlias, TypedDict

from bastion.core import RunContext, UserError
from bastion.tools import Deny, ToolCallRequest

from ._entries import ModelResponseEntry, RunStartedEntry, ToolResultEntry, read_entry
from ._narrow import json_object, json_objects
from ._scope import live_scope

if TYPE_CHECKING:
    from bastion.stores import Stores

__all__ = [
    "CAUSALITY_MODES",
    "TAINT",
    "CausalChain",
    "CausalMonitor",
    "CausalityMode",
    "Cause",
    "Taint",
    "causal_chain",
    "taint_of",
]

CausalityMode: TypeAlias = Literal["off", "record", "enforce"]
CAUSALITY_MODES: tuple[str, ...] = ("off", "record", "enforce")
# A child run's metadata: the untrusted sources its ancestors had read when they delegated.
TAINT = "bastion.causal_taint"
_MAX_DEPTH = 64
_READERS = frozenset({"pure", "read_only"})
# The run metadata keys of a sub-agent's link to its parent (``_subrun.py`` writes them).
_PARENT_RUN_ID = "bastion.parent_run_id"
_PARENT_TOOL_CALL_ID = "bastion.parent_tool_call_id"
_PREVIEW = 200


class Taint(TypedDict):
    """A run that had read untrusted content when it delegated, kept in a child's metadata."""

    run_id: str
    agent: str


@dataclass(frozen=True, kw_only=True, slots=True)
class Cause:
    """One link of a causal chain.

    Attributes:
        kind: ``call`` (the call asked about, or a parent's call that delegated),
            ``input`` (a run's input messages) or ``tool_result`` (a result the agent read
            before the call).
        run_id: The run it belongs to.
        agent: That run's agent.
        step: The step it happened in (0: before the first model call).
        tool_call_id: The call (``call`` and ``tool_result``).
        tool_name: Its tool.
        text: What was asked or read (the arguments, the input, the result), shortened.
        untrusted: Whether it is untrusted content (a tool result marked untrusted).
        source: Where it came from, per its provenance (a URL, a kind), when known.
    """

    kind: Literal["call", "input", "tool_result"]
    run_id: str
    agent: str
    step: int = 0
    tool_call_id: str | None = None
    tool_name: str | None = None
    text: str = ""
    untrusted: bool = False
    source: str | None = None


@dataclass(frozen=True, kw_only=True, slots=True)
class CausalChain:
    """What led to a call, from the call back to the root run.

    Attributes:
        links: The call first; then what its agent had read; then the parent's call that
            delegated the task and what the parent had read; and so on up to the root.
    """

    links: tuple[Cause, ...]

    @property
    def untrusted(self) -> tuple[Cause, ...]:
        """The links with untrusted content (an injected instruction could hide there)."""
        return tuple(link for link in self.links if link.untrusted)


async def causal_chain(stores: Stores, run_id: str, tool_call_id: str) -> CausalChain:
    """Why run ``run_id`` made call ``tool_call_id``: its causes, across agents.

    Raises:
        UserError: The store has no such run, or the run made no such call.
    """
    links: list[Cause] = []
    seen: set[str] = set()
    current: tuple[str, str] | None = (run_id, tool_call_id)
    while current is not None and len(seen) < _MAX_DEPTH:
        run, call = current
        if run in seen:
            break  # a damaged link back to a run already walked
        seen.add(run)
        found, current = await _causes(stores, run, call)
        links.extend(found)
    return CausalChain(links=tuple(links))


async def _causes(
    stores: Stores, run_id: str, call_id: str
) -> tuple[list[Cause], tuple[str, str] | None]:
    """The causes of one call inside its run, and the parent's call above it (if any)."""
    record = await stores.journal.get_run(run_id)
    if record is None:
        raise UserError(f"No run {run_id!r} in the store {stores.url}.")
    entries = [read_entry(e.kind, e.payload) for e in await stores.journal.read(run_id)]
    agent = record.agent
    call: Cause | None = None
    inputs: list[Cause] = []
    read: list[Cause] = []
    parent: tuple[str, str] | None = None
    for entry in entries:
        if isinstance(entry, RunStartedEntry) and not inputs:
            inputs = _inputs(run_id, agent, entry.state)
            parent = _parent(entry.state)
        elif isinstance(entry, ModelResponseEntry) and call is None:
            call = _call(run_id, agent, entry, call_id)
        elif isinstance(entry, ToolResultEntry) and call is None:
            read.append(_result(run_id, agent, entry))
    if call is None:
        raise UserError(f"Run {run_id} made no tool call {call_id!r}.")
    return [call, *inputs, *read], parent


def _call(run_id: str, agent: str, entry: ModelResponseEntry, call_id: str) -> Cause | None:
    for made in entry.message.tool_calls:
        if made.id == call_id:
            return Cause(
                kind="call",
                run_id=run_id,
                agent=agent,
                step=entry.step,
                tool_call_id=call_id,
                tool_name=made.name,
                text=_short(made.arguments),
            )
    return None


def _result(run_id: str, agent: str, entry: ToolResultEntry) -> Cause:
    provenance = entry.provenance or {}
    source = provenance.get("source") or provenance.get("kind")
    return Cause(
        kind="tool_result",
        run_id=run_id,
        agent=agent,
        step=entry.step,
        tool_call_id=entry.tool_call_id,
        tool_name=entry.tool_name,
        text=_short(entry.content),
        untrusted=entry.untrusted or provenance.get("trust") == "untrusted",
        source=str(source) if source else None,
    )


def _inputs(run_id: str, agent: str, state: Mapping[str, object]) -> list[Cause]:
    """The run's input: its user messages."""
    messages = json_objects(state.get("messages"), "A run state's messages")
    return [
        Cause(kind="input", run_id=run_id, agent=agent, text=_short(_text(message)))
        for message in messages
        if message.get("role") == "user"
    ]


def _parent(state: Mapping[str, object]) -> tuple[str, str] | None:
    metadata = json_object(state.get("metadata"), "A run state's metadata")
    parent, call = metadata.get(_PARENT_RUN_ID), metadata.get(_PARENT_TOOL_CALL_ID)
    return (str(parent), str(call)) if parent and call else None


def _text(message: Mapping[str, object]) -> str:
    content = message.get("content")
    if isinstance(content, str):
        return content
    return json.dumps(content, ensure_ascii=False)


def _short(text: str) -> str:
    return text if len(text) <= _PREVIEW else text[: _PREVIEW - 1] + "…"


def taint_of(ctx: RunContext[object], untrusted_seen: bool) -> list[Taint]:
    """What a run passes on to a child it starts: its own taint and its ancestors'."""
    taint = _taint(ctx.metadata)
    if untrusted_seen:
        taint.append(Taint(run_id=ctx.run_id, agent=ctx.agent_name))
    return taint


def _taint(metadata: Mapping[str, object]) -> list[Taint]:
    """The runs above this one that had read untrusted content (``metadata[TAINT]``)."""
    return [
        Taint(run_id=str(t.get("run_id")), agent=str(t.get("agent")))
        for t in json_objects(metadata.get(TAINT), f"metadata[{TAINT!r}]")
    ]


class CausalMonitor:
    """A ``before_tool_call`` hook of a sub-agent under ``causality="enforce"``.

    It refuses a side-effecting call when the run's causal chain holds untrusted content:
    the run read some, or an agent above it had read some when it delegated.
    """

    __slots__ = ()

    def __call__(self, request: ToolCallRequest) -> Deny | None:
        """``Deny`` (``dataflow_policy_blocked``) for a tainted side-effecting call."""
        if request.tool.side_effect_class in _READERS:
            return None
        ctx = request.ctx
        taint = _taint(ctx.metadata)
        scope = live_scope(ctx.run_id)
        if scope is not None and scope.state.untrusted_seen:
            taint = [*taint, Taint(run_id=ctx.run_id, agent=ctx.agent_name)]
        if not taint:
            return None
        who = ", ".join(sorted({f"{t['agent']!r}" for t in taint}))
        return Deny(
            reason=(
                f"Not run: tool {request.tool.name!r} changes things, and the task that led "
                f"to this call passed through untrusted content (read by {who}). Causality "
                "is enforced: answer with what you found instead."
            ),
            kind="dataflow_policy_blocked",
        )
