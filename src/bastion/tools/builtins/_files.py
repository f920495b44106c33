"""File built-ins: ``read_file``, ``write_file``, ``edit_file`` and ``list_dir``.

All go through the call's runtime, which confines them to its work dir: ``..`` and paths
resolving outside it (through symlinks too) are ``sandbox_violation`` tool errors.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from bastion.core import RunContext
from bastion.tools._outcome import ToolError
from bastion.tools._tool import SideEffectClass, Tool, ToolResult, tool

from ._common import guarded, runtime_of

__all__ = [
    "MAX_LIST_ENTRIES",
    "MAX_READ_BYTES",
    "edit_file",
    "list_dir",
    "read_file",
    "write_file",
]

MAX_READ_BYTES = 100_000
"""Bytes of a file ``read_file`` returns at once; ``start_line`` reads further."""
MAX_LIST_ENTRIES = 1_000
_SCAN_BYTES = 8 << 20  # most of a file read to find a line range


async def _read_file(
    ctx: RunContext[Any], path: str, start_line: int = 1, max_lines: int | None = None
) -> ToolResult:
    """Read a text file in the work dir.

    Args:
        ctx: The run context; its runtime holds the files.
        path: File path, relative to the work dir.
        start_line: First line to return (1-based).
        max_lines: Most lines to return (default: as many as fit in 100 KB).
    """
    runtime = runtime_of(ctx)
    if start_line < 1 or (max_lines is not None and max_lines < 1):
        raise ToolError("start_line and max_lines must be >= 1.")
    limit = MAX_READ_BYTES if start_line == 1 and max_lines is None else _SCAN_BYTES
    data = await guarded(path, lambda: runtime.read_file(path, max_bytes=limit + 1))
    if b"\0" in data[:8192]:
        raise ToolError(f"{path!r} is a binary file; read_file returns text only.")
    if start_line > 1 or max_lines is not None:
        lines = data.decode("utf-8", errors="replace").splitlines(keepends=True)
        end = None if max_lines is None else start_line - 1 + max_lines
        data = "".join(lines[start_line - 1 : end]).encode()
    text = data[:MAX_READ_BYTES].decode("utf-8", errors="ignore")
    if len(data) > MAX_READ_BYTES:
        text += (
            f"\n[file truncated: showing the first {MAX_READ_BYTES:,} bytes of a longer "
            "text. Read on with start_line / max_lines.]"
        )
    return ToolResult(output=text, untrusted=True)


async def _write_file(ctx: RunContext[Any], path: str, content: str) -> str:
    """Create or overwrite a text file in the work dir (parent directories are created).

    Args:
        ctx: The run context; its runtime holds the files.
        path: File path, relative to the work dir.
        content: The whole new content of the file.
    """
    runtime = runtime_of(ctx)
    data = content.encode()
    await guarded(path, lambda: runtime.write_file(path, data))
    return f"Wrote {len(data):,} bytes to {path}."


async def _edit_file(
    ctx: RunContext[Any], path: str, old_text: str, new_text: str, replace_all: bool = False
) -> str:
    """Replace exact text in a file of the work dir.

    Args:
        ctx: The run context; its runtime holds the files.
        path: File path, relative to the work dir.
        old_text: Text to find, exactly as in the file (whitespace included).
        new_text: Text to put in its place.
        replace_all: Replace every occurrence; otherwise ``old_text`` must occur once.
    """
    runtime = runtime_of(ctx)
    if not old_text:
        raise ToolError("old_text must not be empty: use write_file to create a file.")
    raw = await guarded(path, lambda: runtime.read_file(path))
    text = raw.decode("utf-8", errors="strict") if b"\0" not in raw else None
    if text is None:
        raise ToolError(f"{path!r} is a binary file; edit_file edits text only.")
    count = text.count(old_text)
    if count == 0:
        raise ToolError(f"old_text was not found in {path!r}: read_file it and copy exactly.")
    if count > 1 and not replace_all:
        raise ToolError(
            f"old_text occurs {count} times in {path!r}: include more context to make it "
            "unique, or pass replace_all=true."
        )
    updated = text.replace(old_text, new_text)
    await guarded(path, lambda: runtime.write_file(path, updated.encode()))
    return f"Replaced {count} occurrence{'s' if count > 1 else ''} in {path}."


async def _list_dir(ctx: RunContext[Any], path: str = ".") -> ToolResult:
    """List a directory of the work dir: directories end with '/', files show their size.

    Args:
        ctx: The run context; its runtime holds the files.
        path: Directory, relative to the work dir (default: the work dir itself).
    """
    runtime = runtime_of(ctx)
    entries = await guarded(path, lambda: runtime.list_dir(path))
    lines: list[str] = []
    for entry in entries[:MAX_LIST_ENTRIES]:
        if entry.kind == "dir":
            lines.append(entry.name + "/")
        elif entry.kind == "symlink":
            lines.append(f"{entry.name}@ (symbolic link)")
        else:
            lines.append(f"{entry.name} ({entry.size:,} bytes)")
    if len(entries) > MAX_LIST_ENTRIES:
        lines.append(f"[{len(entries) - MAX_LIST_ENTRIES:,} more entries not shown]")
    return ToolResult(output="\n".join(lines) or "(empty directory)", untrusted=True)


def _builtin(function: Callable[..., Any], name: str, effect: SideEffectClass, label: str) -> Tool:
    # Writers are sequential: two edits of one file in a step must not interleave.
    mode = "parallel" if effect == "read_only" else "sequential"
    return tool(
        function,
        name=name,
        side_effect_class=effect,
        trust_class="first_party_built_in",
        execution_mode=mode,
        label=label,
    )


read_file: Tool = _builtin(_read_file, "read_file", "read_only", "Read a file")
write_file: Tool = _builtin(_write_file, "write_file", "side_effecting", "Write a file")
edit_file: Tool = _builtin(_edit_file, "edit_file", "side_effecting", "Edit a file")
list_dir: Tool = _builtin(_list_dir, "list_dir", "read_only", "List a directory")
