"""Built-in tools: ``bash``, files (read, write, edit, list) and ``web_fetch``.

``bash`` and the file tools act through the call's runtime (``Agent(runtime=...)``), so the
agent's or the tool's ``sandbox=`` decides where they run, and they never leave its work
dir. ``web_fetch`` refuses internal addresses (SSRF guard) and its output is untrusted.
"""

from ._bash import bash, format_exec
from ._files import MAX_LIST_ENTRIES, MAX_READ_BYTES, edit_file, list_dir, read_file, write_file
from ._ssrf import AddressPolicy, BlockedAddress, Resolver, system_resolver
from ._web_fetch import (
    FETCH_MAX_BYTES,
    FETCH_TIMEOUT,
    FetchResult,
    fetch,
    html_to_text,
    web_fetch,
    web_fetch_tool,
)

__all__ = [
    "AddressPolicy",
    "BlockedAddress",
    "FETCH_MAX_BYTES",
    "FETCH_TIMEOUT",
    "FetchResult",
    "MAX_LIST_ENTRIES",
    "MAX_READ_BYTES",
    "Resolver",
    "bash",
    "edit_file",
    "fetch",
    "file_tools",
    "format_exec",
    "html_to_text",
    "list_dir",
    "read_file",
    "system_resolver",
    "web_fetch",
    "web_fetch_tool",
    "write_file",
]

file_tools = (read_file, write_file, edit_file, list_dir)
"""The four file tools, to pass as ``tools=[*file_tools, bash]``."""
