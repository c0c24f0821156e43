"""Tool identity: visible names are valid, unique, order-independent and route back exactly."""

from __future__ import annotations

import random
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from nbagent.mcp.identity import (
    NATIVE_PREFIX_FORBIDDEN,
    base_name,
    hashed_name,
    qualify_tools,
    raw_digest,
    validate_native_name,
)

VALID = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")

hostile = st.one_of(
    st.text(max_size=20),
    st.text(alphabet="ab._- ", max_size=6),  # collide after sanitising: "a.b", "a b", "a_b"
    st.sampled_from(["x" * 200, "y" * 64, "a.b", "a_b", "a b", "é", "日本", "", "mcp__s__t", "__", "-"]),
    st.integers(min_value=50, max_value=210).map(lambda n: "z" * n),
)
servers = st.one_of(
    st.sampled_from(["s", "srv", "a_b", "a", "b", "x" * 70]), st.text(alphabet="ab_-", min_size=1, max_size=5)
)
identities = st.lists(st.tuples(servers, hostile), max_size=40)


def check(q, raw) -> None:
    distinct = set(raw)
    assert set(q.by_raw) == distinct
    assert len(q.names) == len(distinct), "visible names must be unique"
    for name, ident in q.names.items():
        assert VALID.fullmatch(name), name
        assert name.startswith(NATIVE_PREFIX_FORBIDDEN)
        assert q.by_raw[ident] == name
    for ident, name in q.by_raw.items():
        assert q.names[name] == ident


@settings(max_examples=300, deadline=None)
@given(identities, st.randoms(use_true_random=False))
def test_names_valid_unique_order_independent_and_route_back(raw, rnd) -> None:
    q = qualify_tools(raw)
    check(q, raw)
    shuffled = list(raw)
    rnd.shuffle(shuffled)
    q2 = qualify_tools(shuffled)
    assert q2.names == q.names, "names must not depend on listing order"
    assert q2.warnings == q.warnings
    assert qualify_tools(list(raw)).by_raw == q.by_raw, "stable across runs"


@settings(max_examples=200, deadline=None)
@given(st.lists(st.text(alphabet="a._ ", min_size=1, max_size=4), min_size=2, max_size=12, unique=True))
def test_every_member_of_a_clash_gets_a_hash(tools) -> None:
    raw = [("s", t) for t in tools]
    q = qualify_tools(raw)
    check(q, raw)
    groups: dict[str, list] = {}
    for ident in set(raw):
        groups.setdefault(base_name(*ident), []).append(ident)
    for base, members in groups.items():
        if len(members) > 1:
            for ident in members:
                assert q.by_raw[ident] != base
                assert q.by_raw[ident].endswith(raw_digest(ident)[:8])


def test_plain_names_stay_plain() -> None:
    q = qualify_tools([("fs", "read_file"), ("fs", "write-file")])
    assert q.by_raw == {("fs", "read_file"): "mcp__fs__read_file", ("fs", "write-file"): "mcp__fs__write-file"}
    assert q.warnings == []


def test_sanitising_replaces_each_bad_character() -> None:
    q = qualify_tools([("s", "a.b c/é")])
    assert q.by_raw[("s", "a.b c/é")] == "mcp__s__a_b_c__"


def test_collision_suffixes_all_and_warns() -> None:
    q = qualify_tools([("s", "a.b"), ("s", "a_b"), ("s", "a b")])
    names = sorted(q.names)
    assert len(names) == 3 and all(n.startswith("mcp__s__a_b_") and len(n) == len("mcp__s__a_b_") + 8 for n in names)
    assert any("clash" in w for w in q.warnings)


def test_long_name_truncated_with_hash() -> None:
    q = qualify_tools([("s", "x" * 200)])
    (name,) = q.names
    assert len(name) == 64
    assert name == hashed_name(base_name("s", "x" * 200), raw_digest(("s", "x" * 200)))
    assert q.names[name] == ("s", "x" * 200)


def test_exact_duplicates_kept_once_with_warning() -> None:
    q = qualify_tools([("s", "t"), ("s", "t"), ("s", "t")])
    assert q.names == {"mcp__s__t": ("s", "t")}
    assert len(q.warnings) == 1 and "more than once" in q.warnings[0]


def test_separator_ambiguity_is_not_a_collision_of_raw_identity() -> None:
    """("a__b", "c") and ("a", "b__c") sanitise alike but are different tools."""
    q = qualify_tools([("a__b", "c"), ("a", "b__c")])
    assert len(q.names) == 2
    assert q.by_raw[("a__b", "c")] != q.by_raw[("a", "b__c")]


def test_plain_name_equal_to_anothers_hashed_form() -> None:
    """A tool literally named like another's hashed name keeps it; the other grows its hash."""
    a, b = ("s", "a.b"), ("s", "a_b")
    taken = hashed_name(base_name(*a), raw_digest(a))
    impostor = ("s", taken[len("mcp__s__") :])
    raw = [a, b, impostor]
    q = qualify_tools(raw)
    check(q, raw)
    assert q.by_raw[impostor] == taken
    assert q.by_raw[a] != taken and q.by_raw[a].startswith("mcp__s__a_b_")
    for _ in range(5):
        random.shuffle(raw)
        assert qualify_tools(raw).names == q.names


def test_empty_input() -> None:
    q = qualify_tools([])
    assert q.names == {} and q.by_raw == {} and q.warnings == []


@pytest.mark.parametrize("name", ["run", "my-tool", "a" * 64, "x_1"])
def test_native_names_accepted(name: str) -> None:
    assert validate_native_name(name) == name


@pytest.mark.parametrize("name", ["", "a" * 65, "has space", "dot.ted", "mcp__fs__read", "é", 3])
def test_native_names_rejected(name) -> None:
    with pytest.raises(ValueError):
        validate_native_name(name)
