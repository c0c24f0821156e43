"""``nbagent inspect``: the views of ``nbagent.kit.inspect_text`` without a live session (DESIGN §12.3).

The command has no live session, so each view says where it comes from: ``tools`` opens the
configured servers and shows their catalogue under the configured policy; ``request THREAD
[--all]`` and ``turn THREAD [TURN]`` read what the session that ran the thread wrote beside its
rollout (the last turn's requests' instructions and tools, their items rebuilt from the rollout; each finished turn's
timeline, or, for a turn that left none, its recorded lines); ``wire SERVER`` starts that one
server, lets it initialise and list its tools, closes it and shows that traffic, redacted.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
from pathlib import Path

from nbagent.config import Config, load_config
from nbagent.core.inspect import (
    RequestsRecord,
    TurnView,
    redactor_for,
    request_from_record,
    requests_from_record,
    tool_views,
    turn_from_rollout,
)
from nbagent.kit.args import BadInput, run_command
from nbagent.kit.inspect_text import parser, request_text, requests_text, tools_text, turn_text, wire_text
from nbagent.secrets import redacted
from nbagent.textsafe import VisibleWriter

# -- the command -----------------------------------------------------------------------------------


def _emit(args: argparse.Namespace, data: object, text: str) -> None:
    if args.json:
        print(json.dumps(data, ensure_ascii=False, default=str))
    else:
        print(text)


async def _tools(args: argparse.Namespace, config: Config) -> int:
    from nbagent.kit.servers import sandboxes, server_manager

    warnings: list[str] = list(config.warnings)  # a config file not read is why a tool is missing
    async with server_manager(config, config.home_path / "logs", warnings) as mcp:
        redactor = redactor_for(config)
        views = [redacted(v, redactor) for v in tool_views([mcp.complete(spec) for spec in mcp.list_tools()], args.policy or config.approval_policy)]
    text = config.unread.no_tools("no tools") if not views and config.unread else tools_text(views, sandboxes(config))
    disabled = {name: cfg.disabled_by for name, cfg in config.mcp_servers.items() if cfg.disabled_by}
    text += "".join(f"\nserver {name}: {why}" for name, why in disabled.items())
    _emit(args, {"tools": [v.model_dump(mode="json") for v in views], "warnings": warnings, "disabled": disabled}, text)
    for warning in warnings:
        print(f"warning: {warning}", file=sys.stderr)
    return 0


async def _wire(args: argparse.Namespace, config: Config) -> int:
    from nbagent.kit.servers import UsageProblem, server_manager, server_named

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
            record = RequestsRecord.read(text)
        except ValueError as exc:
            raise BadInput(f"{files.request_path}: not a request record: {exc}") from None
        if not record.requests:
            raise BadInput(f"{files.request_path}: holds no request")
        if args.all:
            every = requests_from_record(thread_id, record, lines)
            _emit(args, every.model_dump(mode="json"), requests_text(every))
        else:
            view = request_from_record(thread_id, record.requests[-1], lines)
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
    args = parser("nbagent inspect", live=False).parse_args(argv)
    prog = f"nbagent inspect {args.view}"
    out = sys.stdout if args.json else VisibleWriter(sys.stdout)
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(VisibleWriter(sys.stderr)):
        return run_command(prog, lambda: _view(args, load_config(getattr(args, "cwd", None) or cwd)))


def _view(args: argparse.Namespace, config: Config) -> int:
    from nbagent import signals

    if args.view == "tools":
        return signals.run(_tools(args, config))
    if args.view == "wire":
        if args.n < 1:
            raise BadInput("-n must be at least 1")
        return signals.run(_wire(args, config))
    return _recorded(args, config)

