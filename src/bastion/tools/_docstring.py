"""Read a tool's description and parameter descriptions from its docstring.

Understands Google style (``Args:`` sections) and Sphinx style (``:param name: text``).
"""

from __future__ import annotations

import inspect
import re

__all__ = ["parse_docstring"]

_SECTION = re.compile(
    r"^\s*(Args|Arguments|Parameters|Params|Returns|Return|Yields|Raises|Examples?|Notes?)\s*:\s*$"
)
_ARG_LINE = re.compile(r"^\s*\*{0,2}(\w+)\s*(?:\(([^)]*)\))?\s*:\s*(.*)$")
_SPHINX = re.compile(r"^\s*:param\s+(?:[\w\[\], ]+\s+)?(\w+)\s*:\s*(.*)$")


def parse_docstring(doc: str | None) -> tuple[str, dict[str, str]]:
    """Return ``(description, {parameter: description})`` from a docstring."""
    if not doc:
        return "", {}
    lines = inspect.cleandoc(doc).splitlines()
    description: list[str] = []
    params: dict[str, str] = {}
    section: str | None = None
    current: str | None = None
    arg_indent: int | None = None
    for line in lines:
        header = _SECTION.match(line)
        if header:
            section = header.group(1).lower()
            current, arg_indent = None, None
            continue
        sphinx = _SPHINX.match(line)
        if sphinx:
            current = str(sphinx.group(1))
            params[current] = sphinx.group(2).strip()
            section = "sphinx"
            continue
        if section is None:
            description.append(line)
        elif section in ("args", "arguments", "parameters", "params"):
            indent = len(line) - len(line.lstrip())
            if line.strip() and indent == 0:
                # An unindented paragraph ends the section; it belongs to the description.
                section, current, arg_indent = None, None, None
                description.append(line)
                continue
            match = _ARG_LINE.match(line)
            if match and (arg_indent is None or indent <= arg_indent):
                arg_indent = indent
                current = str(match.group(1))
                params[current] = match.group(3).strip()
            elif current is not None and line.strip():
                params[current] = f"{params[current]} {line.strip()}".strip()
        elif (
            section == "sphinx"
            and current is not None
            and line.strip()
            and not line.lstrip().startswith(":")
        ):
            params[current] = f"{params[current]} {line.strip()}".strip()
    return "\n".join(description).strip(), params
