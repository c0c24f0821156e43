"""Raw tool identity vs the model-visible name (DESIGN §3).

A raw identity ``(server, tool)`` is what the server sent and what ``tools/call``, approvals and
the rollout use. The model only ever sees ``mcp__{server}__{tool}`` squeezed into
``^[a-zA-Z0-9_-]{1,64}$``; the reverse map built here is the only way a call is routed back.
Names are a pure function of the *set* of raw identities, so they do not depend on the order a
server lists its tools in and are the same after a restart.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable
from dataclasses import dataclass, field

from nbagent.protocol.tools import RawIdentity

MAX_NAME_LEN = 64
"""OpenAI function names: ``^[a-zA-Z0-9_-]{1,64}$``."""
NATIVE_PREFIX_FORBIDDEN = "mcp__"
"""Only MCP tools carry this prefix, so no server can shadow a native or Python tool."""
HASH_LEN = 8
"""Hex digits of the SHA-1 suffix; grown only in the pathological case of a clash."""

_NAME_RE = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
_BAD_CHARS = re.compile(r"[^A-Za-z0-9_-]")


@dataclass
class Qualified:
    """The catalogue's two-way name map."""

    names: dict[str, RawIdentity] = field(default_factory=dict)
    """Model-visible name -> raw identity (the routing table)."""
    by_raw: dict[RawIdentity, str] = field(default_factory=dict)
    """Raw identity -> model-visible name."""
    warnings: list[str] = field(default_factory=list)


def sanitize_name(text: str) -> str:
    """Every character outside ``[A-Za-z0-9_-]`` becomes ``_`` (one per code point)."""
    return _BAD_CHARS.sub("_", text)


def raw_digest(raw: RawIdentity) -> str:
    """SHA-1 hex of the raw identity; JSON-encoded so ``("a_b", "c")`` and ``("a", "b_c")`` differ."""
    return hashlib.sha1(json.dumps(list(raw), ensure_ascii=False).encode("utf-8")).hexdigest()


def base_name(server: str, tool: str) -> str:
    """``mcp__{server}__{tool}`` sanitised, before any length limit."""
    return sanitize_name(f"{NATIVE_PREFIX_FORBIDDEN}{server}__{tool}")


def hashed_name(base: str, digest: str, hash_len: int = HASH_LEN) -> str:
    """``base`` cut so that ``_`` + ``hash_len`` hex digits fit in 64 characters."""
    suffix = "_" + digest[:hash_len]
    return base[: MAX_NAME_LEN - len(suffix)] + suffix


def _fallback_names(raw: RawIdentity, base: str, digest: str) -> Iterable[str]:
    """Candidates for a name that must carry a hash, shortest hash first, then counters."""
    for n in range(HASH_LEN, len(digest) + 1, 4):
        yield hashed_name(base, digest, n)
    counter = 0
    while True:  # practically unreachable: needs a full SHA-1 clash with another candidate
        counter += 1
        extra = hashlib.sha256(f"{digest}:{counter}".encode()).hexdigest()[:16]
        yield hashed_name(base, extra, 16)


def qualify_tools(raw: Iterable[tuple[str, str]]) -> Qualified:
    """Give every distinct raw identity a unique, valid, order-independent visible name.

    A name that fits and is unique keeps its plain form. Too long: cut and suffix with a hash.
    Distinct identities that clash after sanitising all get hashes (none is privileged by
    list order). Plain names are assigned first; hashed ones then go in sorted raw order and
    grow their hash until free, so even a plain name equal to another's hashed form resolves
    deterministically.
    """
    out = Qualified()
    seen: set[tuple[str, str]] = set()
    duplicates: set[tuple[str, str]] = set()
    for item in raw:
        ident = (str(item[0]), str(item[1]))
        if ident in seen:
            duplicates.add(ident)
        seen.add(ident)
    out.warnings = [f"server {s!r} lists tool {t!r} more than once; keeping one" for s, t in sorted(duplicates)]

    idents = sorted(seen)
    bases = {ident: base_name(*ident) for ident in idents}
    candidate: dict[tuple[str, str], str] = {}
    groups: dict[str, list[tuple[str, str]]] = {}
    for ident in idents:
        b = bases[ident]
        c = b if len(b) <= MAX_NAME_LEN and b else hashed_name(b, raw_digest(ident))
        candidate[ident] = c
        groups.setdefault(c, []).append(ident)

    used: set[str] = set()
    plain: dict[tuple[str, str], str] = {}
    needs_hash: list[tuple[str, str]] = []
    for c, members in groups.items():
        if len(members) == 1 and c == bases[members[0]]:
            plain[members[0]] = c
            used.add(c)
        else:
            needs_hash.extend(members)
            if len(members) > 1:
                shown = ", ".join(f"{s}/{t}" for s, t in members)
                out.warnings.append(f"tool names clash as {c!r} after sanitising ({shown}); all get hash suffixes")

    assigned = dict(plain)
    for ident in sorted(needs_hash):
        digest = raw_digest(ident)
        for name in _fallback_names(ident, bases[ident], digest):
            if name not in used:
                break
        used.add(name)
        assigned[ident] = name

    for ident in idents:
        name = assigned[ident]
        out.by_raw[ident] = name
        out.names[name] = ident
    return out


def validate_native_name(name: str) -> str:
    """Check a native or Python tool name; returns it, raises ``ValueError`` saying why not.

    Such names go to the model verbatim (no sanitising, no silent rename) and may not use the
    ``mcp__`` prefix, which is what keeps MCP servers from shadowing them.
    """
    if not isinstance(name, str) or not _NAME_RE.fullmatch(name):
        raise ValueError(f"tool name {name!r} must match ^[a-zA-Z0-9_-]{{1,64}}$")
    if name.startswith(NATIVE_PREFIX_FORBIDDEN):
        raise ValueError(f"tool name {name!r} may not start with {NATIVE_PREFIX_FORBIDDEN!r} (reserved for MCP tools)")
    return name
