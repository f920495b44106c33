"""Resuming a run: from a kept :class:`RunState`, or from its journal by id.

``Agent.stream(state, directive=...)`` and ``Agent.resume_stream(run_id, ...)`` call these.
A journaled run is claimed before it is read (a live owner's run is refused), rebuilt from
its entries (recorded model responses and tool results are replayed, never repeated) and
continued; a suspended run needs a directive deciding exactly its pending calls.
"""

from __future__ import annotations

import copy
from contextlib import aclosing
from typing import TYPE_CHECKING, Any

from bastion.core import UserError

from ._loop import run_loop
from ._ownership import check_session_owner
from ._replay import load_run
from ._state import RunState
from .steps._approvals import check_directive
from .steps._end import end_event

if TYPE_CHECKING:
    from collections.abc import AsyncGenerator

    from bastion.core import AgentEvent
    from bastion.tools import Directive

    from ._config import RunConfig
    from ._hooks import SessionLink
    from ._journal import RunJournal
    from ._runs import AgentRuns
    from ._scope import RunScope
    from ._stream import AgentStream

__all__ = ["resume_journaled", "resume_state"]


def resume_state(  # noqa: PLR0917 - one resumed run's parts
    runs: AgentRuns,
    config: RunConfig,
    saved: RunState,
    directive: Directive | None,
    deps: object,
    link: SessionLink | None,
) -> AgentStream[Any]:
    """Continue the suspended run ``saved`` (a kept state) with ``directive``'s decisions."""
    if saved.agent_name != config.name:
        raise UserError(
            f"Run {saved.run_id} belongs to agent {saved.agent_name!r}, not {config.name!r}."
        )
    _check_governed(saved, config)
    if directive is None and saved.status == "awaiting_approval":
        state = copy.deepcopy(saved)  # nothing decided: it stays as it was, no model is called

        async def unchanged() -> AsyncGenerator[AgentEvent, None]:
            yield end_event(state)

        return runs.stream(runs.scope(config, state, deps, governed=False), unchanged)
    decisions = check_directive(saved, directive)
    resolutions = tuple(directive.interrupts) if directive is not None else ()
    state = copy.deepcopy(saved)  # the caller's copy stays as it was
    journal = runs.journal(config, state.run_id, None, link)
    if journal is not None:
        journal.decided = directive
    scope = runs.scope(config, state, deps, journal, link=link)

    async def resumed() -> AsyncGenerator[AgentEvent, None]:
        if journal is not None:  # a kept state: its suspension must still be open
            await journal.check_open(state)
        async for event in run_loop(scope, None, None, decisions, resolutions):
            yield event

    return runs.stream(scope, resumed)


def resume_journaled(  # noqa: PLR0917 - one resumed run's parts
    runs: AgentRuns,
    config: RunConfig,
    run_id: str,
    directive: Directive | None,
    deps: object,
    link: SessionLink | None,
) -> AgentStream[Any]:
    """Continue the journaled run ``run_id``; its state is loaded when iteration starts."""
    placeholder = RunState(run_id=run_id, agent_name=config.name)

    def events() -> AsyncGenerator[AgentEvent, None]:
        resumed = _Resumed(runs, config, stream, directive, deps, link)
        return resumed.events(run_id)

    stream = runs.stream(runs.scope(config, placeholder, deps, governed=False), events)
    return stream


class _Resumed:
    """One journaled run being continued: claimed, loaded, then run to its end."""

    def __init__(  # noqa: PLR0917 - one resumed run's parts
        self,
        runs: AgentRuns,
        config: RunConfig,
        stream: AgentStream[Any],
        directive: Directive | None,
        deps: object,
        link: SessionLink | None,
    ) -> None:
        self.runs = runs
        self.config = config
        self.stream = stream
        self.directive = directive
        self.deps = deps
        self.link = link

    async def events(self, run_id: str) -> AsyncGenerator[AgentEvent, None]:
        await self.runs.open_store()
        journal = self.runs.journal(self.config, run_id, None, self.link)
        assert journal is not None  # the agent has a store
        await journal.claim()  # a live owner's run is refused (RunBusy) before it is read
        events = self._continue(journal, run_id)
        try:
            async for event in events:
                yield event
        finally:
            await journal.release()  # ended, refused or closed early (else the end released it)

    async def _continue(self, journal: RunJournal, run_id: str) -> AsyncGenerator[AgentEvent, None]:
        config, directive = self.config, self.directive
        replayed = await load_run(journal.stores, run_id, config)
        if self.link is None:  # else the session continuing its turn holds the turn lease
            await check_session_owner(journal.stores, replayed.state, config.clock)
        state = replayed.state
        journal.seq = replayed.seq
        journal.mark = replayed.mark
        if state.status not in ("running", "awaiting_approval") or (
            directive is None and (state.status == "awaiting_approval")
        ):
            # Ended, or suspended with nothing decided: its result says what it is.
            if directive is not None:
                raise UserError(
                    f"Run {run_id} has ended with status {state.status!r}; "
                    "there is nothing to decide."
                )
            self._bind(self.runs.scope(config, state, self.deps, governed=False))
            yield end_event(state)
            return
        if state.status == "awaiting_approval":
            _check_governed(state, config)
            decisions = check_directive(state, directive)
            resolutions = tuple(directive.interrupts) if directive is not None else ()
            journal.decided = directive
            scope = self.runs.scope(config, state, self.deps, journal, link=self.link)
            events = run_loop(scope, None, None, decisions, resolutions)
        else:
            if directive is not None:
                raise UserError(
                    f"Run {run_id} is not awaiting approval (status {state.status!r}); "
                    "resume it without a directive."
                )
            scope = self.runs.scope(config, state, self.deps, journal, link=self.link)
            events = run_loop(scope, None, None, recovery=replayed.recovery)
        self._bind(scope)
        async with aclosing(events):
            async for event in events:
                yield event

    def _bind(self, scope: RunScope) -> None:
        self.stream._bind(scope)  # pyright: ignore[reportPrivateUsage]


def _check_governed(state: RunState, config: RunConfig) -> None:
    if state.interrupts and config.governance is None:
        raise UserError(
            f"Run {state.run_id} is suspended on governance interrupts, but agent "
            f"{config.name!r} has no governance: configure the same policies and budget."
        )
