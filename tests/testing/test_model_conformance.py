"""The model conformance suite, run against the shipped scripted models (issue 12)."""

from __future__ import annotations

from bastion.core import (
    AuthenticationFailed,
    BadRequest,
    ContextLengthExceeded,
    Model,
    Overloaded,
    RateLimited,
    StreamInterrupted,
    Usage,
)
from bastion.testing import SCENARIOS, Call, ModelConformance, Scenario, ScriptedModel, Turn

_ERRORS = {
    "rate_limited": RateLimited("slow down", status=429, retry_after=7.0),
    "overloaded": Overloaded("busy", status=529),
    "bad_request": BadRequest("bad field", status=400),
    "authentication": AuthenticationFailed("bad key", status=401),
    "context_length": ContextLengthExceeded("too long", status=400),
}


def turn(scenario: Scenario) -> Turn:
    """The scripted turn of a scenario, from its spec."""
    spec = SCENARIOS[scenario]
    if scenario in _ERRORS:
        return Turn(error=_ERRORS[scenario])
    if scenario == "broken_stream":
        return Turn(text="half an answer", error=StreamInterrupted("cut"), error_after=1)
    if scenario == "no_usage":
        return Turn(text=spec.text, usage=Usage())
    return Turn(
        text=spec.text,
        reasoning=spec.reasoning or None,
        reasoning_signature="sig-Zm9vYmFyYmF6" if spec.reasoning else None,
        tool_calls=[Call(name, args) for name, args in spec.tool_calls],
    )


class TestScriptedModel(ModelConformance):
    def make_model(self, *scenarios: Scenario) -> Model:
        return ScriptedModel([turn(s) for s in scenarios])

    def sent(self, model: Model) -> str:
        assert isinstance(model, ScriptedModel)
        return repr(model.requests[-1].messages)
