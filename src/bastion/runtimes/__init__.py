"""Where tools execute: a local process, or a bubblewrap sandbox, in a work dir.

A tool reaches its runtime as ``ctx.runtime``; give an agent one with
``Agent(runtime=LocalRuntime("work"))`` and sandbox it (or single tools) with ``sandbox=``.
"""

from bastion.core import (
    DEFAULT_MAX_OUTPUT_BYTES,
    DirEntry,
    ExecResult,
    FsAccess,
    Runtime,
    RuntimeAccessError,
    SandboxConfig,
    resolve_sandbox,
)

from ._local import LocalRuntime
from ._sandbox import SandboxRuntime, bwrap_argv, find_bwrap

__all__ = [
    "DEFAULT_MAX_OUTPUT_BYTES",
    "DirEntry",
    "ExecResult",
    "FsAccess",
    "LocalRuntime",
    "Runtime",
    "RuntimeAccessError",
    "SandboxConfig",
    "SandboxRuntime",
    "bwrap_argv",
    "find_bwrap",
    "resolve_sandbox",
]
