"""Verify: run the agent's verifiers on a final answer, after parsing, before output guardrails.

Order: a structured answer is parsed (and retried while it does not parse) first, so the
verifiers judge the typed value; output guardrails come last, on the answer the verifiers
let through, so a guardrail's ``rewrite`` is what the caller gets. Every verifier runs; the
feedback of those that fail goes back to the model in one user message and the loop goes
on, while ``max_rounds`` lasts.
"""

from __future__ import annotations

from bastion.agent._scope import RunScope
from bastion.agent._verifiers import Verdict, Verification, checked, verifier_name
from bastion.core import AgentEvent, UserMessage, VerifierResultEvent

__all__ = ["verify"]


async def verify(
    scope: RunScope, config: Verification, output: object
) -> tuple[list[AgentEvent], bool]:
    """Judge ``output``: the ``verifier.result`` events, and whether to accept the answer.

    Not accepted: the feedback was appended (the model answers again), or the rounds are
    spent and ``on_exhausted="fail"`` failed the run.
    """
    state = scope.state
    round_ = state.verifier_rounds + 1
    events: list[AgentEvent] = []
    feedback: list[str] = []
    for check in config.checks:
        name = verifier_name(check)
        error: str | None = None
        try:
            verdict = await checked(check, scope.ctx, output)
        except Exception as exc:  # a broken check counts as passed, and is reported
            verdict, error = Verdict.ok(), f"{type(exc).__name__}: {exc}"
        if verdict.usage is not None:
            state.add_usage(verdict.model or f"verifier:{name}", verdict.usage)
            scope.ctx.usage = state.usage
        events.append(
            VerifierResultEvent(
                run_id=scope.run_id,
                verifier=name,
                passed=verdict.passed,
                feedback="" if verdict.passed else verdict.feedback,
                round=round_,
                error=error,
            )
        )
        if not verdict.passed:
            feedback.append(verdict.feedback or f"The answer did not pass the check {name!r}.")
    if not feedback:
        return events, True
    if state.verifier_rounds < config.max_rounds:
        state.verifier_rounds = round_
        state.messages.append(UserMessage(content=_feedback_text(feedback)))
        return events, False
    if config.on_exhausted == "fail":
        state.fail(
            "verification_failed",
            f"The answer still failed verification after {config.max_rounds} round(s) of "
            f"feedback: {' '.join(feedback)}",
        )
        return events, False
    return events, True


def _feedback_text(feedback: list[str]) -> str:
    if len(feedback) == 1:
        return f"Your answer was checked and needs revision: {feedback[0]}"
    items = "\n".join(f"- {text}" for text in feedback)
    return f"Your answer was checked and needs revision:\n{items}"
