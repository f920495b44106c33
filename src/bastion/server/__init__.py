"""Agents over HTTP: runs, resumable Server-Sent Event streams, approvals, tenants.

``create_app(agents, store=..., auth=...)`` builds a FastAPI application; ``bastion serve
module:attr`` runs one with uvicorn. Needs the ``server`` extra (``pip install
'bastion[server]'``). See ``docs/server.md``.
"""

from __future__ import annotations

from ._app import create_app
from ._events import EventLog, LoggedEvent

__all__ = ["EventLog", "LoggedEvent", "create_app"]
