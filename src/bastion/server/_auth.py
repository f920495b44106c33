"""Bearer tokens mapped to tenants, and the tenant scope every run and approval lives in."""

from __future__ import annotations

import hmac
from collections.abc import Mapping
from dataclasses import dataclass

from starlette.requests import HTTPConnection

from bastion.core import BastionError, UserError

__all__ = ["Caller", "TokenAuth", "Unauthorized"]


class Unauthorized(BastionError):
    """No bearer token, or one the server does not know."""


@dataclass(frozen=True, kw_only=True, slots=True)
class Caller:
    """Who is calling: their tenant, or no tenant scope at all (a server without auth)."""

    tenant: str | None
    scoped: bool

    def sees(self, tenant: str | None) -> bool:
        """Whether a run of ``tenant`` is visible to this caller."""
        return not self.scoped or tenant == self.tenant


class TokenAuth:
    """Bearer tokens, each naming the tenant its caller acts for.

    Raises:
        UserError: An empty token or tenant.
    """

    def __init__(self, tokens: Mapping[str, str]) -> None:
        for token, tenant in tokens.items():
            if not token or not tenant:
                raise UserError("auth: every bearer token and its tenant must be non-empty.")
        self._tokens = tuple((t.encode(), tenant) for t, tenant in tokens.items())

    def caller(self, conn: HTTPConnection) -> Caller:
        """The caller the request's ``Authorization: Bearer`` token names.

        Raises:
            Unauthorized: No token, or an unknown one.
        """
        scheme, _, token = conn.headers.get("authorization", "").partition(" ")
        if scheme.lower() != "bearer" or not token.strip():
            raise Unauthorized("Send 'Authorization: Bearer <token>'.")
        given = token.strip().encode()
        tenant = None
        for known, owner in self._tokens:  # every token compared: no timing hint
            if hmac.compare_digest(known, given):
                tenant = owner
        if tenant is None:
            raise Unauthorized("Unknown bearer token.")
        return Caller(tenant=tenant, scoped=True)
