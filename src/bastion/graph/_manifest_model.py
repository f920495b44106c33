"""The manifest schema (pydantic: manifests are untrusted input) and its parser."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TypeAlias, cast

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from bastion.core import UserError

__all__ = [
    "EdgeManifest",
    "GraphManifest",
    "Manifest",
    "MapManifest",
    "NodeManifest",
    "parse_manifest",
]

Manifest: TypeAlias = Mapping[str, object]
"""Manifest data as given or read (JSON or YAML): untrusted, validated by :func:`parse_manifest`."""


class MapManifest(BaseModel):
    """A map node: run the registered graph ``map`` per element of ``items``."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    map: str
    items: str | None = None
    max_concurrency: int = Field(default=8, ge=1)
    policies: list[str] = Field(default_factory=list[str])


class NodeManifest(BaseModel):
    """A registered node with node-level policies (registered names)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    node: str
    policies: list[str] = Field(default_factory=list[str])


class EdgeManifest(BaseModel):
    """An edge, ``[from, to]`` or ``{from, to, when}`` (``when``: a registered condition)."""

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)

    source: str = Field(alias="from")
    target: str = Field(alias="to")
    when: str | None = None

    @model_validator(mode="before")
    @classmethod
    def _pair(cls, value: object) -> object:
        if not isinstance(value, list | tuple):
            return value
        pair = cast("Sequence[object]", value)
        return {"from": pair[0], "to": pair[1]} if len(pair) == 2 else pair


class GraphManifest(BaseModel):
    """A graph: its key, nodes (registry names or map nodes), edges and settings."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    key: str
    nodes: dict[str, str | NodeManifest | MapManifest]
    edges: list[EdgeManifest] = Field(default_factory=list[EdgeManifest])
    entry: list[str] = Field(default_factory=list[str])
    output: str | None = None
    max_concurrency: int = Field(default=16, ge=1)
    max_rounds: int | None = Field(default=None, ge=1)
    policies: list[str] = Field(default_factory=list[str])


def parse_manifest(data: Manifest) -> GraphManifest:
    """Validate manifest data.

    Raises:
        UserError: Naming the first wrong field.
    """
    try:
        return GraphManifest.model_validate(dict(data))
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(part) for part in first["loc"]) or "manifest"
        raise UserError(f"Invalid graph manifest at {where!r}: {first['msg']}.") from exc
