"""An MCP server that asks a person mid-call (elicitation) and borrows a model (sampling).

Runs offline: the server is an SDK server in this process, the models are scripted.

    python examples/mcp_questions.py

1. The agent calls ``deploy``; the server asks "Deploy web to production?". Nobody is
   there to answer, so the run suspends (``awaiting_approval``) and is journaled.
2. Later, another Agent object (it could be another process, or ``bastion runs resume
   --answer``) resumes the run with the answer; the tool is called again and the server
   gets the answer to the same question at once.
3. ``release_notes`` asks the client's model to write a line (MCP sampling): it is served
   by the model given as ``sampling=``, under the agent's budget.
"""

from __future__ import annotations

import asyncio
import tempfile
import warnings
from pathlib import Path

from mcp.server import MCPServer as SDKServer
from mcp.server.mcpserver import Context
from mcp.types import SamplingMessage, TextContent
from pydantic import BaseModel

from bastion import Agent
from bastion.mcp import MCPServer
from bastion.testing import Call, ScriptedModel, Turn
from bastion.tools import Directive, InputAnswer

sdk = SDKServer("ops")


class Confirm(BaseModel):
    """The answer the deploy tool asks for."""

    ok: bool


@sdk.tool()
async def deploy(service: str, ctx: Context) -> str:
    """Deploy a service to production, once a person confirmed."""
    answer = await ctx.elicit(f"Deploy {service} to production?", schema=Confirm)
    if answer.action == "accept" and answer.data.ok:
        return f"{service} deployed"
    return f"{service} not deployed ({answer.action})"


@sdk.tool()
async def release_notes(change: str, ctx: Context) -> str:
    """Write a release note line with the client's model."""
    with warnings.catch_warnings():  # sampling is deprecated in the newest protocol
        warnings.simplefilter("ignore")
        result = await ctx.session.create_message(  # pyright: ignore[reportDeprecated]
            [SamplingMessage(role="user", content=TextContent(type="text", text=change))],
            max_tokens=60,
        )
    content = result.content
    return content.text if isinstance(content, TextContent) else ""


def make_agent(store: str, script: list[Turn]) -> Agent:
    writer = ScriptedModel([Turn(text="Faster search for everyone.")], name="writer")
    server = MCPServer.in_process(sdk, sampling=writer)  # elicitation="suspend" is the default
    return Agent("ops", model=ScriptedModel(script), tools=[server], store=store)


async def main() -> None:
    store = f"sqlite:///{Path(tempfile.mkdtemp()) / 'runs.db'}"
    script = [
        Turn(tool_calls=[Call("deploy", {"service": "web"})]),
        Turn(tool_calls=[Call("release_notes", {"change": "search index rebuilt"})]),
        Turn(text="Deployed, notes written."),
    ]
    async with make_agent(store, script) as agent:
        suspended = await agent.run("Deploy web and write the release note.")
    (pending,) = suspended.pending_approvals
    assert pending.input is not None
    print(f"{suspended.status}: {pending.input.message}")

    answer = InputAnswer(tool_call_id=pending.tool_call_id, content={"ok": True})
    async with make_agent(store, script[1:]) as agent:  # a new agent, same store
        done = await agent.resume(suspended.run_id, directive=Directive(inputs=[answer]))
    assert done.state is not None
    for record in done.state.tool_calls:
        print(f"{record.name} -> {record.result.splitlines()[1]}")
    print(f"models used: {', '.join(sorted(done.usage_by_model))}")
    print(f"{done.status}: {done.output}")


if __name__ == "__main__":
    asyncio.run(main())
