"""The in-memory backend passes the store conformance suite (ARCHITECTURE §5, journal)."""

from __future__ import annotations

import pytest

from bastion.testing import StoreConformance


class TestMemoryStores(StoreConformance):
    independent_handles = False

    @pytest.fixture
    def store_url(self) -> str:
        return "memory://"
