"""``ReasoningConfig`` in the Messages API's fields: ``thinking`` and ``output_config.effort``.

A thinking budget turns extended thinking on (``thinking: {type: enabled, budget_tokens}``);
an effort level goes to ``output_config.effort``, which also bounds the tokens of the answer
and its tool calls; effort ``none`` sends ``thinking: {type: disabled}``. Called by
``_payload.build_payload``.
"""

from __future__ import annotations

from bastion.core import JsonObject, ReasoningConfig, ReasoningEffort, UserError
from bastion.providers._errors import as_object
from bastion.providers._reasoning import accepted_effort

__all__ = ["MIN_THINKING_BUDGET", "apply_reasoning"]

MIN_THINKING_BUDGET = 1024
"""The smallest extended-thinking budget the Messages API accepts."""
_EFFORTS: tuple[ReasoningEffort, ...] = ("none", "low", "medium", "high", "xhigh", "max")


def apply_reasoning(body: JsonObject, config: ReasoningConfig) -> None:
    """A budget enables extended thinking; an effort goes to ``output_config.effort``.

    Raises:
        UserError: A budget under the API's minimum or not below ``max_tokens``, a level
            the API has no name for, or effort ``none`` together with a budget.
    """
    budget, effort = config.budget_tokens, config.effort
    if budget is not None:
        if budget < MIN_THINKING_BUDGET or budget >= _max_tokens(body):
            raise UserError(
                f"ReasoningConfig(budget_tokens={budget}) cannot be sent to Anthropic: the "
                f"budget must be at least {MIN_THINKING_BUDGET} and below max_tokens "
                f"({body['max_tokens']}); raise ModelSettings.max_tokens or lower the budget."
            )
        if effort == "none":
            raise UserError(
                "ReasoningConfig(effort='none') turns thinking off: it cannot go with a "
                "budget_tokens."
            )
        body["thinking"] = {"type": "enabled", "budget_tokens": budget}
    if effort == "none":
        body["thinking"] = {"type": "disabled"}
        return
    effort = accepted_effort(config, "Anthropic", _EFFORTS)
    if effort is not None:
        body["output_config"] = {**(as_object(body.get("output_config")) or {}), "effort": effort}


def _max_tokens(body: JsonObject) -> int:
    """The ``max_tokens`` the payload builder set (always an integer there)."""
    value = body["max_tokens"]
    if not isinstance(value, int):
        raise TypeError(f"Anthropic payload max_tokens is not an integer: {value!r}")
    return value
