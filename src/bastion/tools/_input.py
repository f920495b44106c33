"""A tool that needs a person's answer in the middle of its call: ``InputRequired``.

Some tools cannot finish without asking someone (an MCP server's elicitation: "Really
deploy to production?"). Such a tool raises :class:`InputRequired`; the executor then
treats the call like one waiting for approval: it gets no result, the run suspends
(``awaiting_approval``) with the question in the call's ``ApprovalRequest.input``, and the
run is resumed, in this process or another, with an :class:`InputAnswer` in
``Directive.inputs``. The call then runs again from the start, with the answer in
``ctx.input_answer``: the tool gives it when it is asked the same question again.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, TypeAlias

from bastion.core import JsonObject, UserError

from ._schema import ToolArgumentsError, check_against, compile_schema

__all__ = ["InputAction", "InputAnswer", "InputRequest", "InputRequired"]

InputAction: TypeAlias = Literal["accept", "decline", "cancel"]
_ACTIONS: tuple[str, ...] = ("accept", "decline", "cancel")


@dataclass(kw_only=True, frozen=True, slots=True)
class InputRequest:
    """The question a tool asks in the middle of its call (JSON-ready: it is journaled).

    Attributes:
        message: The question, for a person.
        schema: The JSON Schema of the answer's ``content`` (an object).
        source: Who asks (``mcp:<server>`` for an MCP server's elicitation).
        context: What the tool needs back with the answer (given back unchanged).
    """

    message: str
    schema: dict[str, Any] = field(default_factory=dict[str, Any])
    source: str = ""
    context: dict[str, Any] = field(default_factory=dict[str, Any])


@dataclass(kw_only=True, frozen=True, slots=True)
class InputAnswer:
    """A person's answer to a pending call's question (``Directive(inputs=[...])``).

    Attributes:
        tool_call_id: The call that asked.
        action: ``accept`` (with ``content``), ``decline`` (no answer given) or ``cancel``
            (the question was dismissed).
        content: The answer, valid against the question's schema (``accept`` only).
        request: The question answered; filled in by ``resume`` from the pending call.
    """

    tool_call_id: str
    action: InputAction = "accept"
    content: dict[str, Any] | None = None
    request: InputRequest | None = None

    def checked(self, request: InputRequest) -> InputAnswer:
        """This answer bound to ``request``, once it is a valid answer to it.

        Raises:
            UserError: An unknown action, content with a decline or cancel, or content
                that does not match the question's schema (every violation named).
        """
        where = f"The answer to call {self.tool_call_id!r}"
        if self.action not in _ACTIONS:
            raise UserError(
                f"{where}: action must be 'accept', 'decline' or 'cancel', got {self.action!r}."
            )
        if self.action != "accept":
            if self.content is not None:
                raise UserError(f"{where}: an answer that {self.action}s carries no content.")
            return InputAnswer(tool_call_id=self.tool_call_id, action=self.action, request=request)
        content = self.content
        if not isinstance(content, Mapping):
            raise UserError(f"{where}: accept needs content, a JSON object, got {content!r}.")
        _validate(where, dict(content), request.schema)
        return InputAnswer(
            tool_call_id=self.tool_call_id, action="accept", content=dict(content), request=request
        )


class InputRequired(Exception):
    """Raised by a tool that needs a person's answer to go on (see the module doc).

    Args:
        request: The question.
    """

    def __init__(self, request: InputRequest) -> None:
        super().__init__(request.message)
        self.request = request


def _validate(where: str, content: JsonObject, schema: JsonObject) -> None:
    validator = compile_schema(schema) if schema else False
    if validator is False:
        return  # no schema, or one nobody can check: the asker judges the answer
    try:
        check_against(validator, content)
    except ToolArgumentsError as exc:
        problems = "; ".join(exc.problems)
        raise UserError(f"{where} does not match the requested schema: {problems}.") from exc
