"""``nbagent inspect`` and the text every front end shows for ``inspect`` (DESIGN §12.3).

The command has no live session, so each view says where it comes from: ``tools`` opens the
configured servers and shows their catalogue under the configured policy; ``request THREAD`` and
``turn THREAD [TURN]`` read what the session that ran the thread wrote beside its rollout (the
last request's instructions and tools, its items rebuilt from the rollout; each finished turn's
timeline, or, for a turn that left none, its recorded lines); ``wire SERVER`` starts that one
server, lets it initialise and list its tools, closes it and shows that traffic, redacted.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from nbagent.cli_errors import BadInput, Parser, cwd_option, fail
from nbagent.config import Config, ConfigError, load_config
from nbagent.core.inspect import (
    RequestRecord,
    RequestView,
    ToolView,
    TurnView,
    redacted,
    redactor_for,
    request_from_record,
    tool_views,
    turn_from_rollout,
)
from nbagent.mcp.wire import WIRE_KEEP, WireMessage
from nbagent.protocol.ops import POLICIES
from nbagent.textsafe import VisibleWriter

__all__ = [
    "WIRE_DEFAULT",
    "main",
    "parser",
    "request_text",
    "tools_text",
    "turn_text",
    "wire_text",
]

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


def tools_text(views: Sequence[ToolView]) -> str:
    if not views:
        return "no tools"
    lines: list[str] = []
    for v in views:
        where = f"{v.server}/{v.raw_name}" if v.server else v.raw_name
        lines.append(f"{v.name}  <- {where}  [{v.source}]")
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
    return f"  {kind:<22} {str(name):<24} {_short(body, 70)}"


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


# -- the command -----------------------------------------------------------------------------------


def _emit(args: argparse.Namespace, data: object, text: str) -> None:
    if args.json:
        print(json.dumps(data, ensure_ascii=False, default=str))
    else:
        print(text)


async def _tools(args: argparse.Namespace, config: Config) -> int:
    from nbagent.cli_mcp import server_manager

    warnings: list[str] = list(config.warnings)  # a config file not read is why a tool is missing
    async with server_manager(config, config.home_path / "logs", warnings) as mcp:
        redactor = redactor_for(config)
        views = [redacted(v, redactor) for v in tool_views([mcp.complete(spec) for spec in mcp.list_tools()], args.policy or config.approval_policy)]
    text = config.unread.no_tools("no tools") if not views and config.unread else tools_text(views)
    _emit(args, {"tools": [v.model_dump(mode="json") for v in views], "warnings": warnings}, text)
    for warning in warnings:
        print(f"warning: {warning}", file=sys.stderr)
    return 0


async def _wire(args: argparse.Namespace, config: Config) -> int:
    from nbagent.cli_mcp import UsageProblem, server_manager, server_named

    try:
        server_named(config, args.server)
    except UsageProblem as exc:
        raise BadInput(str(exc)) from None
    only = config.model_copy(update={"mcp_servers": {args.server: config.mcp_servers[args.server]}})
    warnings: list[str] = []
    async with server_manager(only, config.home_path / "logs", warnings) as mcp:
        conn = mcp.connection(args.server)
        state = conn.state if conn is not None else "not started"
        messages = mcp.wire(args.server, args.n)
    _emit(args, {"server": args.server, "state": state, "messages": [m.model_dump(mode="json") for m in messages]},
          wire_text(args.server, messages) + ("" if state == "ready" else f"\n(server {state})"))  # fmt: skip
    for warning in warnings:
        print(f"warning: {warning}", file=sys.stderr)
    return 0 if state == "ready" else 1


def _thread(config: Config, ref: str) -> tuple[str, Path, Path]:
    from nbagent.store import ThreadStore

    with ThreadStore(config.home_path) as store:
        thread_id = store.resolve(ref)
        if thread_id is None:
            raise BadInput(f"no thread {ref!r} under {config.home_path}")
        return thread_id, store.path_for(thread_id), store.threads_dir


def _recorded(args: argparse.Namespace, config: Config) -> int:
    from nbagent.store import read_rollout
    from nbagent.store.inspect_files import InspectFiles

    thread_id, rollout, threads_dir = _thread(config, args.thread)
    files = InspectFiles(threads_dir, thread_id)
    lines, _warnings = read_rollout(rollout)
    if args.view == "request":
        text = files.request()
        if text is None:
            raise BadInput(f"thread {thread_id} has no recorded model request ({files.request_path} is missing)")
        try:
            record = RequestRecord.model_validate_json(text)
        except ValueError as exc:
            raise BadInput(f"{files.request_path}: not a request record: {exc}") from None
        view = request_from_record(thread_id, record, lines)
        _emit(args, view.model_dump(mode="json"), request_text(view))
        return 0
    turn = _recorded_turn(files.turns(), args.turn) or turn_from_rollout(thread_id, args.turn, lines)
    if turn is None:
        raise BadInput(f"thread {thread_id} has no turn {args.turn!r}" if args.turn else f"thread {thread_id} has no turns")
    _emit(args, turn.model_dump(mode="json"), turn_text(turn))
    return 0


def _recorded_turn(lines: list[str], turn_id: str | None) -> TurnView | None:
    """The newest timeline line for ``turn_id`` (the last turn when ``None``); a line that is
    not a timeline (a hand edit, a torn write) is skipped."""
    for line in reversed(lines):
        with contextlib.suppress(ValueError):
            view = TurnView.model_validate_json(line)
            if turn_id is None or view.turn_id == turn_id:
                return view
    return None


def main(argv: list[str], cwd: str | None = None) -> int:
    """``nbagent [-C DIR] inspect VIEW ...``: 0 shown, 1 a server failed, 2 bad input."""
    from nbagent import signals

    args = parser("nbagent inspect", live=False).parse_args(argv)
    prog = f"nbagent inspect {args.view}"
    out = sys.stdout if args.json else VisibleWriter(sys.stdout)
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(VisibleWriter(sys.stderr)):
        try:
            config = load_config(getattr(args, "cwd", None) or cwd)
            if args.view == "tools":
                return signals.run(_tools(args, config))
            if args.view == "wire":
                if args.n < 1:
                    raise BadInput("-n must be at least 1")
                return signals.run(_wire(args, config))
            return _recorded(args, config)
        except (BadInput, ConfigError) as exc:
            return fail(prog, exc)
        except OSError as exc:
            return fail(prog, exc, 1)
        except KeyboardInterrupt:
            return 130
        except signals.Stopped as stop:
            return stop.exit_code

