"""The public surface: sorted, pinned, documented, and cheap to import (STYLE 6, 20; S5)."""

from __future__ import annotations

import dataclasses
import importlib
import inspect
import subprocess
import sys

import pytest

import bastion
import bastion.events

PUBLIC_PACKAGES = [
    "bastion",
    "bastion.events",
    "bastion.core",
    "bastion.tools",
    "bastion.agent",
    "bastion.testing",
    "bastion.providers",
    "bastion.security",
    "bastion.observability",
    "bastion.governance",
    "bastion.stores",
    "bastion.runtimes",
    "bastion.tools.builtins",
]


def test_top_level_exports_are_pinned() -> None:
    # a newcomer reads the root: at most 80 names, the main types, no event or chunk types
    assert bastion.__all__ == [
        "Agent",
        "AgentHooks",
        "AgentStream",
        "Allow",
        "ApprovalConfig",
        "ApprovalDecision",
        "ApprovalRequest",
        "Ask",
        "AssistantMessage",
        "BastionError",
        "Budget",
        "CancelToken",
        "CodeModeConfig",
        "ConcurrentRunError",
        "ContextLengthExceeded",
        "Deny",
        "FallbackPolicy",
        "FilePart",
        "GovernanceOptions",
        "Governor",
        "Graph",
        "GuardrailResult",
        "ImagePart",
        "InputGuardrail",
        "Limit",
        "LoopHooks",
        "MCPServer",
        "Message",
        "Mock",
        "Model",
        "ModelError",
        "ModelOptions",
        "ModelSettings",
        "Output",
        "OutputGuardrail",
        "OutputValidationError",
        "PolicyAction",
        "Progress",
        "RateLimited",
        "ReasoningConfig",
        "RetryConfig",
        "Rewrite",
        "RunConfig",
        "RunContext",
        "RunError",
        "RunFailed",
        "RunOptions",
        "RunResult",
        "RunState",
        "Session",
        "SkipTool",
        "SystemMessage",
        "Team",
        "TextPart",
        "Tool",
        "ToolCall",
        "ToolCallRecord",
        "ToolMessage",
        "ToolOptions",
        "ToolResult",
        "ToolRetry",
        "ToolSet",
        "Usage",
        "UserError",
        "UserMessage",
        "Verdict",
        "Verification",
        "dump_messages",
        "evaluator_optimizer",
        "external_agent",
        "handoff",
        "input_guardrail",
        "load_messages",
        "open_store",
        "output_guardrail",
        "run_state_from_json",
        "run_state_to_json",
        "tool",
    ]
    assert len(bastion.__all__) <= 80


def test_event_exports_are_pinned() -> None:
    assert bastion.events.__all__ == [
        "AgentCancellingEvent",
        "AgentEndEvent",
        "AgentErrorEvent",
        "AgentEvent",
        "AgentFollowUpEvent",
        "AgentStartEvent",
        "AgentSteeredEvent",
        "AgentSuggestionsEvent",
        "ContextCompactedEvent",
        "ContextCompactionFailedEvent",
        "FinishChunk",
        "FinishReason",
        "GovernanceEvent",
        "GuardrailTrippedEvent",
        "HandoffEvent",
        "ModelCircuitEvent",
        "ModelFellbackEvent",
        "ModelRetryEvent",
        "ReasoningChunk",
        "ReasoningDeltaEvent",
        "RunErrorInfo",
        "RunStatus",
        "StepEndEvent",
        "StepStartEvent",
        "StreamChunk",
        "SubagentEvent",
        "TextChunk",
        "TextCompleteEvent",
        "TextDeltaEvent",
        "ToolApprovalRequestedEvent",
        "ToolApprovalResolvedEvent",
        "ToolCallDeltaChunk",
        "ToolCallDeltaEvent",
        "ToolCallEndChunk",
        "ToolCallEndEvent",
        "ToolCallIncompleteEvent",
        "ToolCallStartChunk",
        "ToolCallStartEvent",
        "ToolErrorKind",
        "ToolExecuteEndEvent",
        "ToolExecuteErrorEvent",
        "ToolExecutePartialEvent",
        "ToolExecuteProgressEvent",
        "ToolExecuteStartEvent",
        "ToolLoopDetectedEvent",
        "ToolRetryEvent",
        "ToolSourceErrorEvent",
        "VerifierResultEvent",
        "dump_event",
        "load_event",
    ]


def test_no_event_or_chunk_type_is_at_the_root() -> None:
    assert [n for n in bastion.__all__ if n.endswith(("Event", "Chunk"))] == []


def test_unknown_names_fail_at_the_root_and_in_events() -> None:
    with pytest.raises(AttributeError, match="module 'bastion' has no attribute"):
        _ = bastion.no_such_name
    with pytest.raises(AttributeError, match=r"module 'bastion\.events' has no attribute"):
        _ = bastion.events.no_such_name


@pytest.mark.parametrize("package", PUBLIC_PACKAGES)
def test_all_is_sorted_and_resolvable(package: str) -> None:
    module = importlib.import_module(package)
    names: list[str] = module.__all__
    assert names == sorted(names)
    assert len(set(names)) == len(names)
    for name in names:
        assert getattr(module, name) is not None, f"{package}.{name}"


@pytest.mark.parametrize("package", PUBLIC_PACKAGES)
def test_every_public_class_and_function_is_documented(package: str) -> None:
    module = importlib.import_module(package)
    undocumented: list[str] = []
    for name in module.__all__:
        value = getattr(module, name)
        if not (inspect.isclass(value) or inspect.isfunction(value)):
            continue  # type aliases document themselves through their members
        if not (value.__doc__ or "").strip():
            undocumented.append(name)
        if inspect.isclass(value):
            for attr, member in vars(value).items():
                if attr.startswith("_") or not inspect.isfunction(member):
                    continue
                if not (member.__doc__ or "").strip():
                    undocumented.append(f"{name}.{attr}")
    assert undocumented == []


def test_import_bastion_pulls_no_heavy_dependency() -> None:
    # covers S5: lazy imports (no pydantic, httpx, SDK, server or driver at `import bastion`)
    code = (
        "import sys, bastion\n"
        "heavy = ['pydantic', 'httpx', 'openai', 'anthropic', 'jsonschema', 'rich', 'typer',\n"
        "         'psycopg', 'redis', 'fastapi', 'mcp', 'typing_extensions']\n"
        "print(','.join(m for m in heavy if m in sys.modules))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""


def test_building_an_agent_without_tools_does_not_need_pydantic() -> None:
    code = (
        "import sys\n"
        "from bastion import Agent\n"
        "from bastion.testing import ScriptedModel\n"
        "result = Agent('a', model=ScriptedModel(['hi'])).run_sync('x')\n"
        "assert result.output == 'hi'\n"
        "print('pydantic' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_agent_is_small_and_reads_its_settings_from_config() -> None:
    # issue 26: at most 25 constructor parameters, the rest in typed option objects;
    # no properties repeating RunConfig fields (read them on ``agent.config``)
    from bastion import Agent, ModelOptions, RunOptions, ToolOptions

    params = [p for p in inspect.signature(Agent.__init__).parameters if p != "self"]
    assert len(params) <= 25
    assert {"tool_options", "model_options", "run_options", "governance"} <= set(params)
    properties = {n for n, v in vars(Agent).items() if isinstance(v, property)}
    assert properties == {"config", "runs_in_flight"}
    for options in (ToolOptions(), ModelOptions(), RunOptions()):
        assert dataclasses.is_dataclass(options)
