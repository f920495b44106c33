"""The agent's side of context management: compaction before each model call.

``Agent(context=ContextConfig(...))`` builds one :class:`ContextKeeper` (the budget from the
model's context window, the token counter for its tokenizer, the summarizer model); each run
gets a :class:`RunWindow` holding the run's token ledger. Before every model call the loop
asks the window; when the request would pass the trigger, the history is compacted in place
and a ``context.compacted`` event goes out. The compacted history is journaled, so a resumed
run continues from it and never pays for the summary again.

The summarizer is a model call of the run: it passes the governor (``llm:<provider>:<model>``)
and its usage counts in the run's usage. A compaction that fails (the summarizer errs, a
budget refuses it) is reported and the run goes on uncompacted: running out of room later is
better than failing a run that could still fit. A run that holds ``secret`` tool output is
never compacted automatically (a summary would copy it to a summarizer).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Protocol

from bastion.context import (
    CalibratedCounter,
    TokenLedger,
    clear_old_results,
    compact,
    token_counter,
)
from bastion.core import (
    AssistantMessage,
    ContextCompactedEvent,
    ContextCompactionFailedEvent,
    ModelRequest,
    SystemMessage,
    ToolMessage,
    UserError,
    UserMessage,
)

if TYPE_CHECKING:
    from bastion.context import (
        Compaction,
        ContextConfig,
        ResultKeeper,
        TokenCounter,
    )
    from bastion.core import (
        Message,
        Model,
        RunContext,
        Usage,
    )

    from ._governance import RunGovernance
    from ._journal import RunJournal
    from ._state import RunState

__all__ = [
    "SUMMARY_INSTRUCTIONS",
    "ContextKeeper",
    "RunWindow",
    "WindowChange",
    "compacted_event",
    "render_span",
]


class CompactionScope(Protocol):
    """What compaction reads of a run (the loop's ``RunScope`` is one)."""

    @property
    def run_id(self) -> str: ...

    @property
    def state(self) -> RunState: ...

    @property
    def ctx(self) -> RunContext[object]: ...

    @property
    def governance(self) -> RunGovernance | None: ...

    @property
    def journal(self) -> RunJournal | None: ...


SUMMARY_INSTRUCTIONS = (
    "You compact a conversation between a user and an AI assistant that uses tools. Write a "
    "summary the assistant can continue from without the original messages: the user's "
    "goals and constraints, decisions made, facts learned (names, numbers, identifiers, file "
    "paths, URLs, exactly as written), what the tools returned that still matters, and what "
    "is still open. Be concise; no preamble."
)
"""The summarizer's instructions."""


def render_span(messages: Sequence[Message]) -> str:
    """A span of conversation as plain text for a summarizer (any protocol accepts it)."""
    lines: list[str] = []
    for message in messages:
        if isinstance(message, SystemMessage):
            lines.append(f"[system] {message.content}")
        elif isinstance(message, UserMessage):
            lines.append(f"[user] {message.text}")
        elif isinstance(message, AssistantMessage):
            if message.text:
                lines.append(f"[assistant] {message.text}")
            lines.extend(
                f"[assistant called {call.name}] {call.arguments}" for call in message.tool_calls
            )
        else:
            lines.append(f"[{message.tool_name} returned] {message.text}")
    return "\n".join(lines)


class ContextKeeper:
    """One agent's compaction settings: budget, counter and summarizer model."""

    __slots__ = ("budget", "config", "counter", "summarizer")

    def __init__(self, config: ContextConfig, model: Model, summarizer: Model, owner: str) -> None:
        budget = config.budget(model.context_window)
        if budget is None:
            raise UserError(
                f"{owner}: context=ContextConfig(...) needs the model's context window, and "
                f"{model.key!r} does not say it. Pass ContextConfig(max_context_tokens=...)."
            )
        self.config = config
        self.budget = budget
        self.counter: TokenCounter = token_counter(model.tokenizer)
        self.summarizer = summarizer

    def window(self) -> RunWindow:
        """The state one run needs (its token ledger)."""
        return RunWindow(self)

    async def compact(
        self,
        messages: Sequence[Message],
        scope: CompactionScope | None,
        *,
        governance: RunGovernance | None = None,
        keep: ResultKeeper | None = None,
        spent: list[tuple[str, Usage]] | None = None,
        budget: int | None = None,
    ) -> Compaction:
        """Compact ``messages`` now (to ``budget``, default the agent's).

        The summarizer's calls pass ``governance`` (the run's, when ``scope`` is given) and
        count in ``scope``'s usage; ``spent`` receives each call's model and usage.
        """
        if scope is not None and governance is None:
            governance = scope.governance

        async def summarize(span: Sequence[Message]) -> str:
            return await self._summarize(span, scope, governance, spent)

        return await compact(
            messages,
            self.config,
            self.counter,
            budget=self.budget if budget is None else budget,
            summarizer=summarize,
            keep=keep,
        )

    async def summarize_older(
        self,
        messages: Sequence[Message],
        keep_last: int,
        *,
        governance: RunGovernance | None = None,
    ) -> Compaction:
        """Summarize every exchange older than the last ``keep_last`` (manual compaction)."""

        async def summarize(span: Sequence[Message]) -> str:
            return await self._summarize(span, None, governance, None)

        config = replace(self.config, strategy="summarize", keep_last=keep_last)
        return await compact(messages, config, self.counter, budget=1, summarizer=summarize)

    async def _summarize(
        self,
        span: Sequence[Message],
        scope: CompactionScope | None,
        governance: RunGovernance | None,
        spent: list[tuple[str, Usage]] | None,
    ) -> str:
        model = self.summarizer
        request = ModelRequest(
            messages=[
                SystemMessage(content=SUMMARY_INSTRUCTIONS),
                UserMessage(content=render_span(span)),
            ]
        )
        if governance is not None:
            substitute = await governance.guard(governance.check_model(model, request))
            if substitute is not None:  # an interrupt decision supplied the summary
                return str(substitute.value)
        response = await model.request(request)
        if governance is not None:
            await governance.guard(governance.record_model(model, response.usage))
        if scope is not None:
            scope.state.add_usage(model.key, response.usage)
            scope.ctx.usage = scope.state.usage
        if spent is not None:
            spent.append((model.key, response.usage))
        return response.message.text


class RunWindow:
    """One run's view of its context: the ledger of what the history costs in tokens."""

    __slots__ = (
        "_cleared",
        "_counted",
        "_model",
        "_stuck_told",
        "_tokens",
        "budget",
        "keeper",
        "ledger",
    )

    def __init__(self, keeper: ContextKeeper) -> None:
        self.keeper = keeper
        counter = keeper.counter
        self.ledger = TokenLedger(counter)
        self._counted = 0  # the base count of the last request, for calibration
        self._tokens = 0  # the count of the last request checked
        self._cleared = 0.0  # no early clear before the history passes this count
        self._stuck_told = False
        self.budget = keeper.budget
        """The tokens a request may hold: the agent's, or a smaller fallback model's."""
        self._model: Model | None = None  # the model that answered last

    def answered_by(self, model: Model) -> None:
        """The last call was answered by ``model`` (a fallback, maybe).

        A model with a smaller window than the budget lowers it: the next checks trigger
        at that model's threshold, so the run's next requests fit the model it falls back
        to. The budget never grows back within the run (the fallback may be needed again).
        """
        if model is self._model:
            return
        self._model = model
        window = model.context_window
        if window is not None:
            own = max(window - self.keeper.config.reserve_output_tokens, 1)
            self.budget = min(self.budget, own)

    def _stuck(
        self, scope: CompactionScope, done: Compaction
    ) -> ContextCompactionFailedEvent | None:
        """Say once per run that the kept exchanges alone pass the trigger."""
        if self._stuck_told:
            return None
        self._stuck_told = True
        config = self.keeper.config
        return ContextCompactionFailedEvent(
            run_id=scope.run_id,
            tokens=done.tokens_before,
            strategy=config.strategy,
            reason=(
                f"nothing older than the last {config.keep_last} exchanges is left to compact, "
                f"and they hold {done.tokens_before:,} of a {self.budget:,}-token budget; "
                "lower ContextConfig(keep_last=...) or use a model with a larger window"
            ),
        )

    def tokens(self, messages: Sequence[Message]) -> int:
        """What ``messages`` cost as a request."""
        return self.ledger.count(messages)

    async def _clear(
        self, scope: CompactionScope, keep: ResultKeeper | None
    ) -> WindowChange | None:
        """The early trigger: clear old large results (no model call), if there are any."""
        messages = scope.state.messages
        done = await clear_old_results(messages, self.keeper.config, self.keeper.counter, keep=keep)
        # The next early clear waits until the history grew by a tenth of the budget: few
        # passes over the history, and the cached prompt prefix changes seldom.
        self._cleared = done.tokens_after + self.budget * _CLEAR_STEP
        if not done.changed:
            return None
        messages[:] = done.messages
        return WindowChange(event=compacted_event(scope, done, source="auto-trigger"), spent=[])

    def over(self, messages: Sequence[Message]) -> bool:
        """Whether a request of ``messages`` passes the compaction trigger."""
        keeper = self.keeper
        tokens = self._tokens = self.ledger.count(messages)
        counter = keeper.counter
        self._counted = (
            tokens if not isinstance(counter, CalibratedCounter) else round(tokens / counter.factor)
        )
        return tokens > self.budget * keeper.config.threshold

    def observe(self, usage: Usage) -> None:
        """Learn from the vendor's count of the last request (estimating counters only)."""
        counter = self.keeper.counter
        if isinstance(counter, CalibratedCounter) and not usage.unreported_requests:
            counter.observe(self._counted, usage.prompt_tokens)

    async def before_model_call(
        self, scope: CompactionScope, keep: ResultKeeper | None
    ) -> WindowChange | None:
        """Compact the run's history when it passes the trigger; what happened, or ``None``.

        The compacted history replaces the run's messages; the loop journals it once its
        event is numbered.
        """
        keeper = self.keeper
        messages = scope.state.messages
        config = keeper.config
        if not config.enabled:
            return None
        if not self.over(messages):
            early = config.clear_results_at
            if early is None or self._tokens <= max(self.budget * early, self._cleared):
                return None
            if _secret(messages):
                return None
            return await self._clear(scope, keep)
        if _secret(messages):
            return None
        spent: list[tuple[str, Usage]] = []
        try:
            done = await keeper.compact(messages, scope, keep=keep, spent=spent, budget=self.budget)
        except Exception as exc:  # the run goes on uncompacted; the event says why
            failed = ContextCompactionFailedEvent(
                run_id=scope.run_id,
                tokens=self.ledger.count(messages),
                strategy=keeper.config.strategy,
                reason=f"{type(exc).__name__}: {exc}",
            )
            return WindowChange(event=failed)
        if done.tokens_after >= done.tokens_before:  # nothing older to compact: keep as is
            stuck = self._stuck(scope, done)
            return None if stuck is None else WindowChange(event=stuck)
        messages[:] = done.messages
        return WindowChange(event=compacted_event(scope, done, source="auto-trigger"), spent=spent)


@dataclass(frozen=True, slots=True)
class WindowChange:
    """What a check before a model call did: its event, and (compacted) the summary's cost.

    ``spent`` is ``None`` when the history did not change (nothing is journaled).
    """

    event: ContextCompactedEvent | ContextCompactionFailedEvent
    spent: Sequence[tuple[str, Usage]] | None = None


def compacted_event(
    scope: CompactionScope, done: Compaction, *, source: str
) -> ContextCompactedEvent:
    """The ``context.compacted`` event of a compaction in ``scope``'s run."""
    return ContextCompactedEvent(
        run_id=scope.run_id,
        before_tokens=done.tokens_before,
        after_tokens=done.tokens_after,
        summary_tokens=done.summary_tokens,
        duration=done.duration,
        hooks_fired_count=len(done.essentials) + len(done.hook_errors),
        source="manual" if source == "manual" else "auto-trigger",
        strategy=done.strategy,
        hook_errors=done.hook_errors,
    )


_CLEAR_STEP = 0.1


def _secret(messages: Sequence[Message]) -> bool:
    """Whether the history holds a secret tool output (never compacted automatically)."""
    return any(isinstance(m, ToolMessage) and m.sensitivity == "secret" for m in messages)
