"""What a suspended run waits for, and the ``runs resume`` options that decide it.

Used by ``bastion run`` (when a run suspends), ``bastion runs show`` and ``bastion runs
resume``. A run waits on tool calls (an approval, or an *outcome unknown* after a crash)
and on governance interrupts (a budget reached). Each is shown with its id, what it is and
why, and the options that decide it:

- ``--approve ID``: run the call (again, for an outcome unknown);
- ``--happened ID[:RESULT]``: the call did happen: record RESULT as its result, run nothing;
- ``--deny ID[:REASON]``: refuse the call, or the budget interrupt (the model reads why);
- ``--raise ID=MAX``: raise the budget's limit to MAX and retry the action;
- ``--answer ID=JSON`` (or ``ID=decline``, ``ID=cancel``): answer the question a call asked
  in the middle (an MCP server's elicitation); the call runs again with the answer.
"""

from __future__ import annotations

import json
import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import cast

from rich.console import Console
from rich.text import Text

from bastion.core import UserError
from bastion.governance import MutateDecision, SuspendedInterrupt, load_governance_state
from bastion.stores import JournalEntry
from bastion.tools import ApprovalDecision, Directive, InputAnswer, InterruptResolution

from ._format import format_call
from ._json import JsonValue, as_object, as_objects

__all__ = [
    "HAPPENED",
    "Pending",
    "build_directive",
    "open_calls",
    "pending_of_entries",
    "pending_of_state",
]

HAPPENED = "The call ran (confirmed by a person); its result was not recorded."
"""The result recorded by ``--happened ID`` without a result text."""

_UNKNOWN = "Outcome unknown"


@dataclass(frozen=True, kw_only=True, slots=True)
class Pending:
    """One thing a suspended run waits for.

    Attributes:
        id: The tool call id or the interrupt id.
        kind: ``call`` or ``interrupt``.
        what: The call (``name(args)``) or the limit reached.
        reason: Why it waits.
        interrupt: The interrupt as journaled (for ``--raise``), for an interrupt.
        question: The question the call asked mid-call (``message``, ``schema``), if any.
    """

    id: str
    kind: str
    what: str
    reason: str
    interrupt: Mapping[str, object] | None = None
    question: Mapping[str, JsonValue] | None = None

    @property
    def subagent(self) -> bool:
        """Whether the call runs a sub-agent parked until what it waits for is decided."""
        source = self.question.get("source") if self.question is not None else None
        return isinstance(source, str) and source.startswith("agent:")

    @property
    def outcome_unknown(self) -> bool:
        """Whether the call started before a crash and its result was never recorded."""
        return self.reason.startswith(_UNKNOWN)

    def options(self) -> list[str]:
        """The ``runs resume`` options that decide it."""
        if self.kind == "interrupt":
            return [f"--raise {self.id}=MAX", f"--deny {self.id}[:REASON]"]
        if self.subagent:  # a parked sub-agent: decide what it waits for
            return [
                f"--approve {self.id}",
                f"--deny {self.id}[:REASON]",
                f"--answer {self.id}=JSON",
            ]
        if self.question is not None:
            return [f"--answer {self.id}=JSON", f"--answer {self.id}=decline", f"--deny {self.id}"]
        if self.outcome_unknown:
            return [
                f"--happened {self.id}[:RESULT]",
                f"--approve {self.id}",
                f"--deny {self.id}[:REASON]",
            ]
        return [f"--approve {self.id}", f"--deny {self.id}[:REASON]"]


def pending_of_state(state: Mapping[str, JsonValue]) -> list[Pending]:
    """What a run state (as journaled, a JSON object) waits for."""
    found: list[Pending] = []
    interrupts = [_flat(i) for i in as_objects(state.get("interrupts"))]
    held = {c for i in interrupts for c in _ids(i.get("tool_call_ids"))}
    for item in as_objects(state.get("pending_approvals")):
        call = as_object(item.get("call"))
        request = item.get("request")
        if not isinstance(request, Mapping) or str(call.get("id")) in held:  # decided with
            continue  # its interrupt
        arguments = request.get("arguments")
        shown = json.dumps(arguments) if arguments is not None else str(call.get("arguments", ""))
        found.append(
            Pending(
                id=str(call.get("id", "")),
                kind="call",
                what=format_call(str(call.get("name", "")), shown),
                reason=str(request.get("reason") or "The tool needs approval."),
                question=_question(request.get("input")),
            )
        )
    found.extend(
        Pending(
            id=str(item.get("id", "")),
            kind="interrupt",
            what=_limit(item),
            reason=str(item.get("reason") or "A limit was reached."),
            interrupt=item,
        )
        for item in interrupts
    )
    return found


def _flat(item: Mapping[str, JsonValue]) -> Mapping[str, object]:
    """A suspended interrupt as one flat dict, whichever form the state was saved in."""
    loaded = load_governance_state(item)
    return loaded.to_dict() if isinstance(loaded, SuspendedInterrupt) else dict(item)


def _ids(value: object) -> list[str]:
    """The ids of a flat interrupt's ``tool_call_ids`` (a list, or a tuple not yet dumped)."""
    if not isinstance(value, (list, tuple)):
        return []
    return [str(c) for c in cast("list[object] | tuple[object, ...]", value)]


def _question(value: JsonValue) -> Mapping[str, JsonValue] | None:
    return value if isinstance(value, Mapping) else None


def pending_of_entries(entries: Sequence[JournalEntry]) -> list[Pending]:
    """What a journaled run waits for: the state of its last ``interrupt_raised`` entry."""
    raised = [e for e in entries if e.kind == "interrupt_raised"]
    if not raised:
        return []
    return pending_of_state(as_object(raised[-1].payload.get("state")))


def open_calls(entries: Sequence[JournalEntry]) -> list[str]:
    """Calls of a ``running`` run that started with no recorded result, and what resume does.

    Each line: the call id, the call, its side-effect class, and what ``runs resume`` will
    do with it (run it again, or ask a person, as the side-effect ledger decides).
    """
    started: dict[str, Mapping[str, JsonValue]] = {}
    for entry in entries:
        if entry.kind in ("run_started", "interrupt_raised", "run_ended", "model_response"):
            started = {}
        elif entry.kind == "tool_call_started":
            started[str(entry.payload.get("tool_call_id"))] = entry.payload
        elif entry.kind == "tool_result":
            started.pop(str(entry.payload.get("tool_call_id")), None)
    lines: list[str] = []
    for call_id, payload in started.items():
        kind = str(payload.get("side_effect_class") or "unknown")
        call = format_call(str(payload.get("tool_name", "")), str(payload.get("arguments", "")))
        if kind in ("pure", "read_only") or payload.get("idempotency_key") is not None:
            then = "runs again on resume (safe to repeat)"
        else:
            then = (
                "on resume: outcome unknown, a person decides "
                f"(--happened {call_id}[:RESULT] | --approve {call_id} | --deny {call_id})"
            )
        lines.append(f"{call_id}  {call}  [{kind}]  {then}")
    return lines


def _limit(item: Mapping[str, object]) -> str:
    limit = item.get("limit_type") or item.get("kind") or "limit"
    window = f" per {item['window']}" if item.get("window") else ""
    numbers = ""
    if item.get("max") is not None:
        numbers = f": {_number(item.get('current'))} of max {_number(item.get('max'))}"
    return f"{item.get('oracle', '')} {limit}{window}{numbers}".strip()


def _number(value: object) -> str:
    return f"{value:g}" if isinstance(value, (int, float)) else str(value)


def print_pending(out: Console, pending: Sequence[Pending], command: str | None) -> None:
    """Print what the run waits for, the options, and (given) the resume command."""
    for item in pending:
        label = "outcome unknown" if item.outcome_unknown else item.kind
        if item.question is not None:
            label = "sub-agent" if item.subagent else "question"
        out.print(Text(f"  {item.id}  {item.what}  [{label}]"), soft_wrap=True)
        out.print(Text(f"    why: {item.reason}"), soft_wrap=True)
        if item.question is not None and item.subagent:
            context = as_object(item.question.get("context"))
            for waiting in as_objects(context.get("pending")):
                call = format_call(
                    str(waiting.get("tool_name")), json.dumps(waiting.get("arguments"))
                )
                out.print(Text(f"    sub-agent waits on: {call}"), soft_wrap=True)
        elif item.question is not None:
            schema = json.dumps(item.question.get("schema") or {}, separators=(",", ":"))
            out.print(Text(f"    answer schema: {schema}"), soft_wrap=True)
        out.print(Text(f"    decide with: {' | '.join(item.options())}"), soft_wrap=True)
    if command is not None:
        out.print("Resume it with one decision per item, e.g.:")
        out.print(Text(f"  {command}", style="bold cyan"), soft_wrap=True)


def resume_command(
    run_id: str, agent_spec: str, store_url: str | None, pending: Sequence[Pending]
) -> str:
    """A ``bastion runs resume`` command line deciding every item (the first option each)."""
    parts = ["bastion", "runs", "resume", run_id, "--agent", agent_spec]
    if store_url is not None:
        parts += ["--store", store_url]
    for item in pending:
        if item.kind == "interrupt":
            parts += ["--raise", f"{item.id}=MAX"]
        elif item.question is not None and not item.subagent:
            parts += ["--answer", f"{item.id}=JSON"]
        elif item.outcome_unknown:
            parts += ["--happened", item.id]
        else:
            parts += ["--approve", item.id]
    return shlex.join(parts)


def build_directive(
    approve: Sequence[str],
    deny: Sequence[str],
    happened: Sequence[str],
    raise_to: Sequence[str],
    interrupts: Mapping[str, Mapping[str, object]],
    *,
    answers: Sequence[str] = (),
) -> Directive | None:
    """The directive the options describe; ``None`` when there is none.

    Args:
        approve: ``--approve ID`` values.
        deny: ``--deny ID[:REASON]`` values (a call or an interrupt).
        happened: ``--happened ID[:RESULT]`` values.
        raise_to: ``--raise ID=MAX`` values.
        interrupts: The run's pending interrupts by id (to tell a denied interrupt from a
            denied call, and to know which limit ``--raise`` raises).
        answers: ``--answer ID=JSON|decline|cancel`` values.

    Raises:
        UserError: An empty id, an id decided twice, a bad MAX, ``--raise`` of an id
            that is not a pending interrupt, or an answer that is not a JSON object.
    """
    approvals = [ApprovalDecision(tool_call_id=c.strip(), granted=True) for c in approve]
    resolutions: list[InterruptResolution] = []
    for item in deny:
        target, _, reason = item.partition(":")
        target, reason = target.strip(), reason.strip()
        if target in interrupts:
            decision = {"decision": "deny", "reason": reason or "Denied by a person."}
            resolutions.append(InterruptResolution(interrupt_id=target, decision=decision))
        else:
            approvals.append(
                ApprovalDecision(tool_call_id=target, granted=False, reason=reason or None)
            )
    for item in happened:
        call_id, _, result = item.partition(":")
        approvals.append(
            ApprovalDecision(tool_call_id=call_id.strip(), granted=True, result=result or HAPPENED)
        )
    resolutions.extend(_raise(item, interrupts) for item in raise_to)
    inputs = [_answer(item) for item in answers]
    ids = [
        *(a.tool_call_id for a in approvals),
        *(r.interrupt_id for r in resolutions),
        *(i.tool_call_id for i in inputs),
    ]
    if "" in ids:
        raise UserError(
            "--approve, --deny, --happened and --answer need an id, e.g. --approve call_1."
        )
    twice = sorted({i for i in ids if ids.count(i) > 1})
    if twice:
        raise UserError(f"{twice[0]!r} is decided more than once.")
    if not approvals and not resolutions and not inputs:
        return None
    return Directive(approvals=approvals, interrupts=resolutions, inputs=inputs)


def _answer(item: str) -> InputAnswer:
    """``--answer ID=JSON`` (accept with that object), ``ID=decline`` or ``ID=cancel``."""
    call_id, _, value = item.partition("=")
    call_id, value = call_id.strip(), value.strip()
    if value in ("decline", "cancel"):
        return InputAnswer(tool_call_id=call_id, action=value)
    try:
        content: JsonValue = json.loads(value)
    except ValueError:
        content = None
    if not isinstance(content, dict):
        raise UserError(
            f"--answer {item!r}: give ID=JSON with a JSON object (e.g. "
            f"call_1='{{\"ok\": true}}'), ID=decline or ID=cancel."
        )
    return InputAnswer(tool_call_id=call_id, content=dict(content))


def _raise(item: str, interrupts: Mapping[str, Mapping[str, object]]) -> InterruptResolution:
    interrupt_id, sep, value = item.partition("=")
    interrupt_id = interrupt_id.strip()
    interrupt = interrupts.get(interrupt_id)
    if interrupt is None:
        known = ", ".join(repr(i) for i in interrupts) or "none"
        raise UserError(
            f"--raise {item!r}: {interrupt_id!r} is not a pending budget interrupt of the "
            f"run (pending: {known})."
        )
    try:
        maximum = float(value) if sep else float("nan")
    except ValueError:
        maximum = float("nan")
    if not maximum >= 0:  # also NaN
        raise UserError(f"--raise needs ID=MAX with a number MAX >= 0, got {item!r}.")
    return InterruptResolution(
        interrupt_id=interrupt_id, decision=MutateDecision.raising(interrupt, maximum)
    )
