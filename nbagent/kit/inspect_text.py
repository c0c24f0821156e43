"""The text every front end shows for ``inspect`` (DESIGN §12.3), and the views' words: what
``nbagent inspect`` and ``%agent inspect`` both parse and print; ``core/inspect.py`` has the data.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping, Sequence

from nbagent.core.inspect import REQUESTS_KEPT, RequestsView, RequestView, ToolView, TurnView
from nbagent.kit.args import Parser, cwd_option
from nbagent.mcp.wire import WIRE_KEEP, WireMessage
from nbagent.protocol.ops import POLICIES

WIRE_DEFAULT = 20
"""Messages ``inspect wire`` shows unless ``-n`` says otherwise."""
VIEWS = ("tools", "request", "turn", "wire")


def parser(prog: str, *, live: bool) -> Parser:
    """The views and their words; ``live``: inside a session (no THREAD to name)."""
    p = Parser(prog=prog, description="what the runtime sees and sends", add_help=not live)
    sub = p.add_subparsers(dest="view", metavar="VIEW", required=True)
    tools = sub.add_parser("tools", help="each tool: raw and model-visible identity, approval, schema changes")
    if not live:
        tools.add_argument("--policy", choices=POLICIES, help="the policy to judge approvals by (default: configured)")
    request = sub.add_parser("request", help="the last model request as sent: instructions, tools, items")
    request.add_argument("--all", action="store_true",
                         help=f"every model request of the last turn, in order (its last {REQUESTS_KEPT} are kept)")
    turn = sub.add_parser("turn", help="a turn's events as a timeline (default: the last turn)")
    if not live:
        request.add_argument("thread", help="thread id or name")
        turn.add_argument("thread", help="thread id or name")
    turn.add_argument("turn", nargs="?", help="turn id (default: the last turn)")
    wire = sub.add_parser("wire", help="the last JSON-RPC messages to and from one MCP server, redacted")
    wire.add_argument("server")
    wire.add_argument("-n", type=int, default=WIRE_DEFAULT, help=f"how many (default {WIRE_DEFAULT}, kept {WIRE_KEEP})")
    for each in (tools, request, turn, wire):
        each.add_argument("--json", action="store_true", help="one JSON document, for programs")
        if not live:
            cwd_option(each)
    return p


# -- text ----------------------------------------------------------------------------------------


def _short(value: object, width: int = 60) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    text = " ".join(text.split())
    return text if len(text) <= width else text[: width - 1] + "…"


def tools_text(views: Sequence[ToolView], sandboxes: Mapping[str, str] | None = None) -> str:
    """Each tool's identities, approval and schema; ``sandboxes`` (server -> its sandbox) adds
    the sandbox an MCP tool's server runs in."""
    if not views:
        return "no tools"
    lines: list[str] = []
    for v in views:
        where = f"{v.server}/{v.raw_name}" if v.server else v.raw_name
        lines.append(f"{v.name}  <- {where}  [{v.source}]")
        if v.server and sandboxes and v.server in sandboxes:
            lines.append(f"  sandbox: {sandboxes[v.server]}")
        if v.title != v.raw_name:
            lines.append(f"  title: {v.title}")
        hints = ", ".join(f"{k}={val}" for k, val in v.annotations.items()) or "none"
        lines.append(f"  annotations: {hints}")
        lines.append(f"  approval: mode {v.approval_mode}; under policy {v.policy}: {v.effective} ({v.why})")
        if v.schema_changes:
            lines.append(f"  schema raw -> exposed: {len(v.schema_changes)} change(s)")
            for c in v.schema_changes:
                mark = {"removed": "-", "added": "+", "changed": "~"}[c.change]
                what = _short(c.raw) if c.change == "removed" else _short(c.exposed) if c.change == "added" else (
                    f"{_short(c.raw, 28)} -> {_short(c.exposed, 28)}"
                )
                lines.append(f"    {mark} {c.path}: {what}")
        else:
            lines.append("  schema raw -> exposed: unchanged" if v.server else "  schema: nbagent's own")
        lines += [f"  warning: {w}" for w in v.warnings]
    return "\n".join(lines)


def _item_line(item: dict[str, object]) -> str:
    kind = str(item.get("type", "?"))
    name = item.get("name") or item.get("tool") or ""
    body = item.get("text") or item.get("summary") or item.get("output") or item.get("arguments") or item.get("decision") or ""
    return f"  {kind:<22} {name!s:<24} {_short(body, 70)}"


def request_text(view: RequestView) -> str:
    when = time.strftime("%H:%M:%S", time.localtime(view.at))
    lines = [
        f"model request at {when}: model {view.model}, purpose {view.purpose}, turn {view.turn_id or '-'}, "
        f"thread {view.thread_id}",
        f"instructions ({len(view.instructions or '')} chars):",
        *(f"  | {line}" for line in (view.instructions or "").splitlines()),
        f"tools ({len(view.tools)}), parallel calls {'on' if view.parallel_tool_calls else 'off'}:",
        *(f"  {t['name']}: {_short(t.get('description', ''), 70)}" for t in view.tools),
        f"items ({len(view.items)}):",
        *(_item_line(i) for i in view.items),
    ]
    return "\n".join(lines)


def requests_text(view: RequestsView) -> str:
    """Each request of the turn as ``request_text`` shows it, numbered from the turn's first."""
    first = view.dropped + 1
    head = f"turn {view.turn_id or '-'}: model requests {first}-{view.dropped + len(view.requests)} as sent"
    if view.dropped:
        head += f" (requests 1-{view.dropped} not kept: the last {REQUESTS_KEPT} of a turn are)"
    parts = [head, *(f"request {n}: {request_text(r)}" for n, r in enumerate(view.requests, first))]
    return "\n\n".join(parts)


def turn_text(view: TurnView) -> str:
    ended = f"{view.status} after {view.duration_ms:.0f} ms" if view.status and view.duration_ms is not None else (
        view.status or "running"
    )
    source = "" if view.source == "events" else " (no events were kept for it: its recorded lines)"
    lines = [f"turn {view.turn_id} of thread {view.thread_id}: {ended}{source}", f"{'seq':>6} {'+ms':>9}  type"]
    for e in view.entries:
        times = f" ×{e.count}" if e.count > 1 else ""
        lines.append(f"{e.seq:>6} {e.offset_ms:>9.1f}  {e.type}{times}  {e.detail}".rstrip())
    return "\n".join(lines)


def wire_text(server: str, messages: Sequence[WireMessage]) -> str:
    if not messages:
        return f"no messages kept for MCP server {server!r}"
    lines = [f"MCP server {server!r}: last {len(messages)} JSON-RPC message(s), secrets redacted"]
    for m in messages:
        arrow = "->" if m.direction == "sent" else "<-"
        stamp = time.strftime("%H:%M:%S", time.localtime(m.at)) + f".{int(m.at % 1 * 1000):03d}"
        label = " ".join(str(x) for x in (m.kind, m.method, f"id={m.id}" if m.id is not None else None) if x)
        lines.append(f"{m.seq:>5} {stamp} {arrow} {label}")
        lines.append("      " + json.dumps(m.message, ensure_ascii=False, separators=(",", ":")))
    return "\n".join(lines)
