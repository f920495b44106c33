"""The built-in ``read_result`` tool and the ``ResultReader`` protocol.

A result too large for the context is stored behind a handle (``spill_to_file``); the model
pages it with ``read_result`` by byte range (``offset``/``length``) or by line range
(``start_line``/``end_line``, 1-based, inclusive). Spill handles (``spill:...``) are served
by the :class:`~bastion.tools.SpillStore` first; any other handle goes to the
:class:`ResultReader` objects given to the agent (``ToolOptions.result_readers``), tried in
order, the first that ``owns`` the handle answering. Every answer is capped at
:data:`READ_RESULT_MAX_BYTES` and starts with a one-line header saying which range it is and
where the next one starts. Bad ranges, unknown handles and path-like handles are tool errors
that say what to send instead.

``ResultLimiter.read_result_tool()`` builds the tool; ``Agent`` registers it.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Sequence
from typing import Any, BinaryIO, Protocol, runtime_checkable

from bastion.core import RunContext

from ._spill import ResultReadError, SpillStore
from ._tool import Tool, tool

__all__ = [
    "READ_RESULT_MAX_BYTES",
    "ResultReader",
    "make_read_result_tool",
    "read_byte_range",
    "read_line_range",
]

READ_RESULT_MAX_BYTES = 24_000
"""The most bytes of stored result one ``read_result`` call returns (about 6,000 tokens)."""

_READ_RESULT_MAX_TOKENS = 8_192  # above the cap plus header: the limiter never cuts a page


@runtime_checkable
class ResultReader(Protocol):
    """A source of handles ``read_result`` can page, besides the spill store.

    Example: a reader for MCP resources owns ``mcp://`` handles and fetches their ranges.
    """

    def owns(self, handle: str) -> bool:
        """Whether this reader serves ``handle``; readers reject handles of other sources."""
        ...

    async def read(
        self,
        handle: str,
        *,
        offset: int | None,
        length: int | None,
        start_line: int | None,
        end_line: int | None,
    ) -> str:
        """The requested range of the handle's content.

        Raises:
            ResultReadError: The handle or range cannot be served (the model reads why).
        """
        ...


def make_read_result_tool(spill: SpillStore, readers: Sequence[ResultReader] = ()) -> Tool:
    """Build the ``read_result`` tool over a spill store and further readers, in order."""
    chain = tuple(readers)

    async def read_result(
        ctx: RunContext[Any],
        handle: str,
        *,
        offset: int | None = None,
        length: int | None = None,
        start_line: int | None = None,
        end_line: int | None = None,
    ) -> str:
        """Read part of a tool result that was too large to show in full.

        Give a byte range (offset, length) or a line range (start_line, end_line), not
        both; with neither, the first bytes are returned. Each answer holds at most
        24,000 bytes and starts with a header naming the range and where the next starts.

        Args:
            ctx: The run; spill handles resolve only in the run that stored them.
            handle: The handle shown with the shortened result, e.g. 'spill:run_1/AbC...'.
            offset: First byte to return (0-based).
            length: How many bytes to return.
            start_line: First line to return (1-based).
            end_line: Last line to return (inclusive; default: as many as fit).
        """
        _check_range(offset, length, start_line, end_line)
        if spill.owns(handle):
            return await asyncio.to_thread(
                _read_spilled, spill, handle, ctx.run_id, offset, length, start_line, end_line
            )
        for reader in chain:
            if reader.owns(handle):
                return await reader.read(
                    handle,
                    offset=offset,
                    length=length,
                    start_line=start_line,
                    end_line=end_line,
                )
        raise ResultReadError(
            f"Unknown result handle {handle!r}: handles are the opaque names shown with a "
            "shortened result (like 'spill:<run>/<token>'), not file paths."
        )

    return tool(
        read_result,
        side_effect_class="read_only",
        trust_class="first_party_built_in",
        max_result_tokens=_READ_RESULT_MAX_TOKENS,
        truncation_strategy="middle",
        label="Read a stored result",
    )


def _check_range(
    offset: int | None, length: int | None, start_line: int | None, end_line: int | None
) -> None:
    if (offset is not None or length is not None) and (
        start_line is not None or end_line is not None
    ):
        raise ResultReadError(
            "Give a byte range (offset, length) or a line range (start_line, end_line), not both."
        )
    for name, value, least in (
        ("offset", offset, 0),
        ("length", length, 1),
        ("start_line", start_line, 1),
        ("end_line", end_line, 1),
    ):
        if value is not None and value < least:
            raise ResultReadError(f"{name} must be >= {least}, got {value!r}.")
    if start_line is not None and end_line is not None and end_line < start_line:
        raise ResultReadError(
            f"end_line ({end_line}) is before start_line ({start_line}); "
            "give end_line >= start_line."
        )


def _read_spilled(  # noqa: PLR0917 - private, called through asyncio.to_thread
    spill: SpillStore,
    handle: str,
    run_id: str,
    offset: int | None,
    length: int | None,
    start_line: int | None,
    end_line: int | None,
) -> str:
    with spill.open(handle, run_id) as file:
        if start_line is None and end_line is None:
            return read_byte_range(file, offset or 0, length)
        return read_line_range(file, start_line or 1, end_line)


def read_byte_range(file: BinaryIO, offset: int, length: int | None) -> str:
    """Bytes ``offset`` to ``offset + length`` of a file, with a header (blocking).

    Raises:
        ResultReadError: ``offset`` is at or past the end.
    """
    size = os.fstat(file.fileno()).st_size
    if offset >= size:
        raise ResultReadError(
            f"offset {offset} is past the end of the result ({size:,} bytes); "
            f"give an offset below {size}."
        )
    wanted = READ_RESULT_MAX_BYTES if length is None else length
    file.seek(offset)
    data = file.read(min(wanted, READ_RESULT_MAX_BYTES))
    end = offset + len(data)
    header = f"[bytes {offset}-{end - 1} of {size:,}"
    if wanted > READ_RESULT_MAX_BYTES and end < size:
        header += f"; capped at {READ_RESULT_MAX_BYTES:,} bytes"
    if end < size:
        header += f"; next offset {end}"
    return f"{header}]\n{data.decode('utf-8', 'replace')}"


def read_line_range(file: BinaryIO, start: int, end: int | None) -> str:
    """Lines ``start`` to ``end`` (1-based, inclusive) of a file, with a header (blocking).

    Whole lines are returned while they fit in :data:`READ_RESULT_MAX_BYTES`; a first line
    longer than that is cut, and the header gives the byte offset where it continues.

    Raises:
        ResultReadError: ``start`` is past the last line.
    """
    cap = READ_RESULT_MAX_BYTES
    kept: list[bytes] = []
    used = position = total = 0
    last = start - 1
    capped = False
    cut_at: int | None = None  # byte offset where a cut first line continues
    for total, line in enumerate(file, 1):
        if total >= start and not capped and (end is None or total <= end):
            if used + len(line) <= cap:
                kept.append(line)
                used += len(line)
                last = total
            else:
                capped = True
                if not kept:
                    piece = _cut_utf8(line, cap)
                    kept.append(piece)
                    last = total
                    cut_at = position + len(piece)
        position += len(line)
    if start > total:
        raise ResultReadError(
            f"start_line {start} is past the end of the result ({total:,} lines); "
            f"give a start_line from 1 to {total}."
        )
    text = b"".join(kept).decode("utf-8", "replace")
    if cut_at is not None:
        return (
            f"[line {start} of {total:,}, first {len(kept[0]):,} bytes; "
            f"the line continues at offset {cut_at}]\n{text}"
        )
    header = f"[lines {start}-{last} of {total:,}"
    if capped:
        header += f"; capped at {cap:,} bytes; next start_line {last + 1}"
    return f"{header}]\n{text}"


def _cut_utf8(data: bytes, size: int) -> bytes:
    """The longest prefix of ``data`` of at most ``size`` bytes not ending inside a character."""
    end = min(size, len(data))
    while 0 < end < len(data) and data[end] & 0xC0 == 0x80:
        end -= 1
    return data[:end]
