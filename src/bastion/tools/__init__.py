"""Tools: the ``@tool`` factory, schemas, and the executor that runs a step's calls."""

from ._executor import SkipTool, ToolBatch, ToolCallHooks, ToolExecutor, ToolOutcome, end_event
from ._result import render_output
from ._schema import (
    ArgsValidator,
    JsonSchemaValidator,
    ModelArgsValidator,
    ToolArgumentsError,
    function_schema,
)
from ._tool import (
    ExecutionMode,
    MissingClassificationWarning,
    Progress,
    Sensitivity,
    SideEffectClass,
    Tool,
    ToolExample,
    ToolResult,
    ToolTrustClass,
    TruncationStrategy,
    tool,
)

__all__ = [
    "ArgsValidator",
    "ExecutionMode",
    "JsonSchemaValidator",
    "MissingClassificationWarning",
    "ModelArgsValidator",
    "Progress",
    "Sensitivity",
    "SideEffectClass",
    "SkipTool",
    "Tool",
    "ToolArgumentsError",
    "ToolBatch",
    "ToolCallHooks",
    "ToolExample",
    "ToolExecutor",
    "ToolOutcome",
    "ToolResult",
    "ToolTrustClass",
    "TruncationStrategy",
    "end_event",
    "function_schema",
    "render_output",
    "tool",
]
