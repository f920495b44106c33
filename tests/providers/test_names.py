"""Tool names on the wire are sanitised and mapped back (SPEC C9)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from bastion.providers import ToolNameMap
from bastion.providers._names import DEFAULT_WIRE_NAME


def test_valid_names_pass_unchanged_and_dots_become_double_underscores() -> None:
    # covers C9
    names = ToolNameMap(["search", "srv.search", "a" * 100])
    assert names.wire("search") == "search"
    assert names.wire("srv.search") == "srv__search"
    long = names.wire("a" * 100)
    assert len(long) <= 64
    assert names.local(long) == "a" * 100
    assert names.local("srv__search") == "srv.search"
    assert names.local("unknown") == "unknown"


def test_collisions_after_sanitising_stay_distinct() -> None:
    # covers C9 (map back unambiguously)
    names = ToolNameMap(["srv.x", "srv__x"])
    assert names.wire("srv__x") == "srv__x"
    assert names.wire("srv.x") != "srv__x"
    assert names.local(names.wire("srv.x")) == "srv.x"


@given(
    st.lists(st.text(alphabet="abcXYZ019._-", min_size=1, max_size=128), unique=True, max_size=20)
)
def test_every_name_gets_a_unique_valid_wire_name_that_maps_back(local: list[str]) -> None:
    # covers C9
    names = ToolNameMap(local)
    wires = [names.wire(n) for n in local]
    assert len(set(wires)) == len(wires)
    assert all(DEFAULT_WIRE_NAME.match(w) for w in wires)
    assert [names.local(w) for w in wires] == local
