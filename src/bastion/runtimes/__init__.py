"""Where tools execute: a local process, a bubblewrap sandbox, or a Vercel Sandbox microVM.

A tool reaches its runtime as ``ctx.runtime``; give an agent one with
``Agent(runtime=LocalRuntime("work"))`` and sandbox it (or single tools) with ``sandbox=``.
``VercelSandboxRuntime`` (imported on first use) runs everything in a cloud VM instead.
"""

from typing import TYPE_CHECKING

from bastion._lazy import lazy_attributes
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

from ._local import LocalRuntime, SandboxRuntime
from ._sandbox import bwrap_argv, find_bwrap

if TYPE_CHECKING:
    from ._vercel import VercelSandboxRuntime
    from ._vercel_api import VercelSandboxError

_LAZY = {"VercelSandboxRuntime": "._vercel", "VercelSandboxError": "._vercel_api"}

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
    "VercelSandboxError",
    "VercelSandboxRuntime",
    "bwrap_argv",
    "find_bwrap",
    "resolve_sandbox",
]

__getattr__ = lazy_attributes(__name__, _LAZY)
