"""The ``bastion`` command: ``bastion run MODULE:ATTR "prompt"``, ``bastion demo``.

``main()`` is the console-script entry point; ``app`` is the typer application, for
embedding or for testing with ``typer.testing.CliRunner``.
"""

from ._app import app, main

__all__ = ["app", "main"]
