"""Requests a server sends back during a tool call: elicitation (ask a person), sampling.

A :class:`CallScope` is one agent tool call in flight on a server. MCP does not say which
call a server's request belongs to (over stdio nothing ties them), so ``MCPServer`` hands
a request to the scope only when exactly one call of that server is in flight.

Elicitation, without an ``on_elicit`` callback, becomes a suspended run: the scope records
the question, the server is answered ``cancel`` (nobody has answered yet), the call ends
as the server ends it, its result is dropped, and the tool raises ``InputRequired``. (Cancelling
the request instead leaves its HTTP stream open on servers of the 2025 protocol revisions,
and the dangling stream breaks the session when the server restarts.)

The MCP session cannot outlive the process, so a resumed run *calls the tool again* with
the answers given so far (``ctx.input_answer``); when the server asks the same question
(same message, same schema) it gets the stored answer at once. A server whose tool did
something before it asked does it again on that second call.

Sampling runs the configured model through the run's governor: the action
``mcp:<server>:sampling`` and, inside it, the model's own ``llm:<provider>:<model>``.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypedDict, TypeVar

from bastion.core import (
    AssistantMessage,
    JsonObject,
    Message,
    Model,
    ModelRequest,
    ModelResponse,
    ModelSettings,
    RunContext,
    SystemMessage,
    TextPart,
    Usage,
    UserMessage,
)
from bastion.tools import InputAction, InputAnswer, InputRequest, InputRequired

from ._options import ElicitContent

if TYPE_CHECKING:
    from mcp.types import (
        CreateMessageRequestParams,
        CreateMessageResult,
        SamplingMessageContentBlock,
    )

__all__ = ["Answer", "CallScope", "Question", "sample", "wait_or_ask"]

T = TypeVar("T")


class Answer(TypedDict):
    """One answer to a server's question, as kept in the pending request's context."""

    message: str
    schema: JsonObject
    action: InputAction
    content: ElicitContent | None


@dataclass(frozen=True, slots=True)
class Question:
    """A server's elicitation: its message and the JSON Schema of the answer."""

    message: str
    schema: JsonObject


@dataclass(slots=True)
class CallScope:
    """One agent tool call in flight: the run it serves, and the answers it may give.

    Attributes:
        ctx: The run's context for this call (governs sampling).
        answers: Answers a person gave (a resumed call), each a dict with ``message``,
            ``schema``, ``action`` and ``content``.
        given: The answers given to the server during this call, in order.
        usage: What sampling spent, by model key (joins the run's usage).
    """

    ctx: RunContext[Any] | None
    answers: list[Answer] = field(default_factory=list[Answer])
    given: list[Answer] = field(default_factory=list[Answer])
    usage: dict[str, Usage] = field(default_factory=dict[str, Usage])
    question: Question | None = None

    @classmethod
    def of(cls, ctx: RunContext[Any]) -> CallScope:
        """The scope of a call; a resumed one carries the answers given so far."""
        scope = cls(ctx)
        answer = ctx.input_answer
        if isinstance(answer, InputAnswer) and answer.request is not None:
            request = answer.request
            # Journaled by this module (``wait_or_ask``): a list of ``Answer``.
            earlier: Sequence[Answer] = request.context.get("answers") or []
            scope.answers = [
                *earlier,
                {
                    "message": request.message,
                    "schema": request.schema,
                    "action": answer.action,
                    "content": answer.content,
                },
            ]
        return scope

    def answer_for(self, question: Question) -> Answer | None:
        """The stored answer to ``question`` (the first not given yet), if any."""
        for item in self.answers:
            if item["message"] == question.message and item["schema"] == question.schema:
                self.answers.remove(item)
                self.given.append(item)
                return item
        return None

    def ask(self, question: Question) -> None:
        """Keep ``question`` for the tool (the first one: the call ends after it)."""
        if self.question is None:
            self.question = question


async def wait_or_ask(scope: CallScope, call: Awaitable[T], server: str, tool: str) -> T:
    """The call's result, or ``InputRequired`` when the server asked a question meanwhile.

    Raises:
        InputRequired: The server asked; its call ended (whatever it returned or raised
            is dropped). The question and the answers given so far are in the request.
    """
    try:
        result = await call
    except Exception:  # once the server asked, the call's own outcome is dropped by design
        if scope.question is None:
            raise
    else:
        if scope.question is None:
            return result
    question = scope.question
    raise InputRequired(
        InputRequest(
            message=question.message,
            schema=question.schema,
            source=f"MCP server {server!r}",
            context={"server": server, "tool": tool, "answers": scope.given},
        )
    )


async def sample(
    model: Model,
    params: CreateMessageRequestParams,
    scope: CallScope | None,
    server: str,
) -> CreateMessageResult:
    """Answer a ``sampling/createMessage`` with ``model``, governed by the call's run.

    Raises:
        bastion.governance.GovernanceError: The run's governor refused the request.
        bastion.core.ModelError: The model call failed.
    """
    from mcp.types import CreateMessageResult, TextContent

    request = ModelRequest(
        messages=_messages(params),
        settings=ModelSettings(
            max_tokens=params.max_tokens,
            temperature=params.temperature,
            stop=tuple(params.stop_sequences) if params.stop_sequences else None,
        ),
    )

    async def complete() -> ModelResponse:
        return await model.request(request)

    ctx = scope.ctx if scope is not None else None
    if ctx is None:
        response = await complete()
    else:
        governed: Callable[[], Awaitable[ModelResponse]] = lambda: ctx.call(  # noqa: E731
            f"llm:{model.key}", complete
        )
        response = await ctx.call(f"mcp:{server}:sampling", governed)
    if scope is not None:
        spent = scope.usage.get(model.key)
        scope.usage[model.key] = response.usage if spent is None else spent + response.usage
    stop = "maxTokens" if response.finish_reason == "length" else "endTurn"
    return CreateMessageResult(
        role="assistant",
        content=TextContent(type="text", text=response.message.text),
        model=model.key,
        stop_reason=stop,
    )


def _messages(params: CreateMessageRequestParams) -> list[Message]:
    """The request's messages as Bastion messages (text kept, other content described)."""
    messages: list[Message] = []
    if params.system_prompt:
        messages.append(SystemMessage(content=params.system_prompt))
    for item in params.messages:
        text = _text(item.content)
        if item.role == "assistant":
            messages.append(AssistantMessage(parts=[TextPart(text=text)]))
        else:
            messages.append(UserMessage(content=text))
    return messages


def _text(content: SamplingMessageContentBlock | list[SamplingMessageContentBlock]) -> str:
    blocks = content if isinstance(content, list) else [content]
    parts: list[str] = []
    for block in blocks:
        text = getattr(block, "text", None)  # TextContent's (mcp.types is imported lazily)
        parts.append(text if isinstance(text, str) else f"[{block.type} content]")
    return "\n".join(parts)
