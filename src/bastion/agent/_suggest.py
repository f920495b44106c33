"""``Suggester``: an agent's follow-up suggestions, asked for once a run completes.

Built from ``RunOptions(suggestions=Suggestions(...))`` (``_setup.build_suggester``); the loop
calls :meth:`Suggester.suggest` after the final answer. The request and the parsing are in
``bastion.context._suggest``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from bastion.context import parse_suggestions, suggestion_request
from bastion.core import AgentSuggestionsEvent

if TYPE_CHECKING:
    from bastion.core import Model, ModelRequest

    from ._context import CompactionScope

__all__ = ["Suggester"]


@dataclass(frozen=True, slots=True)
class Suggester:
    """An agent's follow-up suggestions: how many, and the model that writes them."""

    count: int
    model: Model

    async def suggest(self, scope: CompactionScope) -> AgentSuggestionsEvent | None:
        """Ask for the suggestions once ``scope``'s run completed; keep them in its state.

        The call passes the run's governor and counts in its usage. A failing call gives
        no suggestions (the event's ``error`` says why); the run stands. ``None``: the
        run has not completed (it goes on, failed or stopped).
        """
        model = self.model
        state = scope.state
        if state.status != "completed":
            return None
        governance = scope.governance
        request = suggestion_request(state.messages, self.count)
        try:
            if governance is not None:
                substitute = await governance.guard(governance.check_model(model, request))
                if substitute is not None:
                    text = str(substitute.value)
                else:
                    text = await self._ask(scope, request)
            else:
                text = await self._ask(scope, request)
        except Exception as exc:  # best effort: the run has its answer already
            error = f"{type(exc).__name__}: {exc}"
            return AgentSuggestionsEvent(
                run_id=scope.run_id, suggestions=[], model=model.key, error=error
            )
        state.suggestions = parse_suggestions(text, self.count)
        return AgentSuggestionsEvent(
            run_id=scope.run_id, suggestions=list(state.suggestions), model=model.key
        )

    async def _ask(self, scope: CompactionScope, request: ModelRequest) -> str:
        model = self.model
        response = await model.request(request)
        governance = scope.governance
        if governance is not None:
            await governance.guard(governance.record_model(model, response.usage))
        scope.state.add_usage(model.key, response.usage)
        scope.ctx.usage = scope.state.usage
        return response.message.text
