"""``bastion models``: the providers Bastion knows, their protocols and their variables.

Lists every way to name a model (``openai:…``, ``anthropic:…``, each
``openai-compatible:<preset>:…``), the wire protocol behind it, the default base URL and
the environment variables it reads, in the order it tries them. Variables that are set are
marked (their values are never printed). Registered with the app by ``_app``.
"""

from __future__ import annotations

import json
from typing import Annotated

import typer
from rich.text import Text

from bastion.providers._catalog import provider_catalog

from ._common import console

__all__ = ["models"]


def models(
    json_lines: Annotated[
        bool, typer.Option("--json", help="Print one JSON object per provider, for scripts.")
    ] = False,
    plain: Annotated[
        bool, typer.Option("--plain", help="Print without colors (automatic in pipes).")
    ] = False,
) -> None:
    """List model providers, their protocols and the variables each reads."""
    rows = provider_catalog()
    if json_lines:
        for info in rows:
            typer.echo(
                json.dumps(
                    {
                        "spec": info.spec,
                        "protocol": info.protocol,
                        "base_url": info.base_url,
                        "base_url_variables": list(info.base_url_variables),
                        "api_key_variables": list(info.api_key_variables),
                        "set": list(info.configured()),
                        "notes": info.notes,
                    }
                )
            )
        return
    out = console(plain=plain)
    for info in rows:
        configured = set(info.configured())

        def names(variables: tuple[str, ...], configured: set[str] = configured) -> str:
            marked = [f"{n} (set)" if n in configured else n for n in variables]
            return ", ".join(marked) or "-"

        out.print(Text.assemble((info.spec, "bold"), "  ", (info.protocol, "cyan")))
        where = f"  base URL  {info.base_url}  from {names(info.base_url_variables)}"
        out.print(where, soft_wrap=True)
        out.print(f"  key       {names(info.api_key_variables)}", soft_wrap=True)
        if info.notes:
            out.print(f"  notes     {info.notes}", soft_wrap=True)
    out.print(
        "\nThe first variable set wins. Details and quirks: docs/providers.md", soft_wrap=True
    )
