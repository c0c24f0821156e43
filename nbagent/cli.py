"""The ``nbagent`` command: headless turns, threads, the index, the tool catalogue, the MCP
server and the offline demo. A front end like the notebook: it submits ops, prints events."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import sys
from pathlib import Path
from typing import Any, TextIO

from nbagent import __version__
from nbagent.config import ConfigError, load_config
from nbagent.protocol import Event, EventAdapter
from nbagent.textsafe import VisibleWriter

POLICIES = ["untrusted", "on-request", "never", "full-auto"]


def _print_event(event: Event, out: TextIO) -> None:
    """One human-readable line (or fragment, for streamed text) per event worth showing."""
    kind = event.type
    if kind == "agent_message_delta":
        out.write(event.delta)  # type: ignore[union-attr]
    elif kind == "agent_message":
        out.write("\n")
    elif kind == "session_configured":
        out.write(f"[model: {event.model_label} | policy: {event.policy} | thread: {event.thread_id}]\n")  # type: ignore[union-attr]
    elif kind == "tool_call_begin":
        where = f" ({event.server}/{event.raw_tool})" if event.server else ""  # type: ignore[union-attr]
        out.write(f"-> {event.tool}{where} {json.dumps(event.arguments)}\n")  # type: ignore[union-attr]
    elif kind == "tool_call_end":
        mark = "x" if event.is_error else "<-"  # type: ignore[union-attr]
        first = event.output.splitlines()[0][:200] if event.output else ""  # type: ignore[union-attr]
        out.write(f"{mark} {event.tool} [{event.status}, {event.duration_ms:.0f} ms] {first}\n")  # type: ignore[union-attr]
    elif kind == "approval_requested":
        out.write(f"? approval needed for {event.tool}: {event.reason}\n")  # type: ignore[union-attr]
    elif kind == "approval_resolved":
        out.write(f"  {event.decision} by {event.by}" + (f": {event.message}" if event.message else "") + "\n")  # type: ignore[union-attr]
    elif kind == "elicitation_requested":
        out.write(f"? {event.server} asks: {event.message}\n")  # type: ignore[union-attr]
    elif kind == "elicitation_resolved":
        out.write(f"  answered {event.action} by {event.by}\n")  # type: ignore[union-attr]
    elif kind == "mcp_startup_update" and event.status in ("ready", "failed"):  # type: ignore[union-attr]
        detail = f"{event.tools} tools" if event.status == "ready" else event.error  # type: ignore[union-attr]
        out.write(f"[mcp {event.server}: {event.status}: {detail}]\n")  # type: ignore[union-attr]
    elif kind in ("error", "warning"):
        out.write(f"{kind}: {event.message}\n")  # type: ignore[union-attr]
    elif kind == "turn_aborted":
        out.write(f"[turn aborted: {event.reason}]\n")  # type: ignore[union-attr]
    elif kind == "token_usage":
        out.write(f"[tokens: {event.input_tokens} in, {event.output_tokens} out]\n")  # type: ignore[union-attr]
    out.flush()


async def _turn(args: argparse.Namespace, thread: str | None) -> int:
    from nbagent.core.session import Session

    as_json: bool = args.json
    out = sys.stdout

    def show(event: Event) -> None:
        if as_json:
            out.write(EventAdapter.dump_json(event).decode() + "\n")
            out.flush()
        else:
            _print_event(event, VisibleWriter(out))  # server and model text: controls shown, not obeyed

    session = Session(model=args.model, policy=args.policy, cwd=args.cwd, thread=thread, entry="cli")
    session.subscribe(show)
    async with session:
        result = await session.run(args.goal)
    return 0 if result.ok else 1


def _threads(args: argparse.Namespace) -> int:
    from nbagent.store import ThreadStore

    config = load_config(args.cwd)
    with ThreadStore(config.home_path) as store:
        threads = store.list_threads(limit=args.limit)
    if args.json:
        print(json.dumps([t.model_dump(mode="json") for t in threads]))
        return 0
    if not threads:
        print(f"no threads under {config.home_path}")
    for t in threads:
        print(f"{t.id}  {t.name or '':20.20}  {t.turns:>3} turns  {(t.last_prompt or '')[:60]}")
    return 0


def _rebuild(args: argparse.Namespace) -> int:
    from nbagent.store import ThreadStore

    config = load_config(args.cwd)
    with ThreadStore(config.home_path) as store:
        count = store.rebuild_index()
    print(f"index rebuilt from {count} rollout(s) under {config.home_path}")
    return 0


async def _tools(args: argparse.Namespace) -> int:
    from nbagent.core.session import Session

    async with Session(cwd=args.cwd, entry="cli") as session:
        await session.wait_for_mcp()
        specs = session.tools()
        status = session.mcp.status()
    rows: list[dict[str, Any]] = [
        {
            "name": s.name,
            "server": s.server,
            "raw_tool": s.raw_name,
            "title": s.display_name,
            "annotations": s.annotations.model_dump(exclude_none=True) if s.annotations else {},
            "approval_mode": s.approval_mode,
            "source": s.source,
        }
        for s in specs
    ]
    if args.json:
        print(json.dumps(rows, ensure_ascii=False))
        return 0
    for name, state in status.items():
        print(f"server {name}: {getattr(state, 'status', state)}")
    for row in rows:
        flags = ",".join(k.removesuffix("_hint") for k, v in row["annotations"].items() if v is True)
        print(f"{row['name']:50} {row['server'] or '-':12} {row['raw_tool']:24} {row['approval_mode']:8} {flags}")
    return 0


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="nbagent", description="An agent runtime for Jupyter notebooks.")
    parser.add_argument("--version", action="version", version=f"nbagent {__version__}")
    parser.add_argument("-C", dest="cwd", default=None, help="work in DIR (config, relative paths)")
    sub = parser.add_subparsers(dest="command", required=True)

    def turn_args(p: argparse.ArgumentParser) -> None:
        p.add_argument("-m", "--model", help="model name, or replay:FILE for a scripted model")
        p.add_argument("--policy", choices=POLICIES, help="approval policy (headless default: never asks)")
        p.add_argument("--json", action="store_true", help="one JSON event per line")
        p.add_argument("-C", dest="cwd", default=argparse.SUPPRESS)

    run = sub.add_parser("run", help="run one turn headless and print its events")
    turn_args(run)
    run.add_argument("goal")
    resume = sub.add_parser("resume", help="continue a thread with one more turn")
    turn_args(resume)
    resume.add_argument("thread")
    resume.add_argument("goal")
    threads = sub.add_parser("threads", help="list threads")
    threads.add_argument("--json", action="store_true")
    threads.add_argument("--limit", type=int, default=50)
    index = sub.add_parser("index", help="the thread index")
    index.add_argument("action", choices=["rebuild"])
    tools = sub.add_parser("tools", help="the tool catalogue the model sees")
    tools.add_argument("--json", action="store_true")
    sub.add_parser("mcp-server", help="serve nbagent as an MCP server (see: nbagent mcp-server --help)", add_help=False)
    demo = sub.add_parser("demo", help="run the quickstart walkthrough offline")
    demo.add_argument("--output", default="build/demo", help="where the executed notebook goes")
    return parser


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["mcp-server"]:
        from nbagent.server.cli import main_mcp_server

        return main_mcp_server(argv[1:])
    args = _parser().parse_args(argv)
    try:
        if args.command == "run":
            return asyncio.run(_turn(args, None))
        if args.command == "resume":
            return asyncio.run(_turn(args, args.thread))
        if args.command == "threads":
            return _threads(args)
        if args.command == "index":
            return _rebuild(args)
        if args.command == "tools":
            with contextlib.redirect_stdout(sys.stdout if args.json else VisibleWriter(sys.stdout)):
                return asyncio.run(_tools(args))
        if args.command == "demo":
            from nbagent.notebook.demo import run_demo

            run_demo(Path(args.output))
            return 0
    except (ConfigError, KeyError) as exc:
        print(f"nbagent: {exc.args[0] if isinstance(exc, KeyError) else exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    return 2


if __name__ == "__main__":
    sys.exit(main())
