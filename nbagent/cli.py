"""The ``nbagent`` command: headless turns, threads, the index, the tool catalogue, the MCP
server and the offline demo. A front end like the notebook: it submits ops, prints events."""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import pkgutil
import sys
from datetime import datetime
from pathlib import Path
from typing import Any

from nbagent import cli_inspect, cli_mcp, cli_trust, cli_undo, signals
from nbagent._version import __version__
from nbagent.config import Config, ConfigError, load_config
from nbagent.config.trust import Unread
from nbagent.core.context import describe as describe_compaction
from nbagent.kit import servers
from nbagent.kit import trust as folder_trust
from nbagent.kit.args import BadInput, Parser, cwd_option, fail, positive, run_command
from nbagent.kit.diffview import changes_text
from nbagent.kit.labels import plural
from nbagent.kit.turn import (
    Approval,
    Card,
    CardChanged,
    Change,
    Compacted,
    Configured,
    Ended,
    Ending,
    Failed,
    LoginChanged,
    MessageChanged,
    Question,
    QuestionChanged,
    ServerChanged,
    TurnModel,
    Warned,
    change_lines,
    denial_line,
    usage_text,
)
from nbagent.models.base import ModelError
from nbagent.protocol import (
    ApprovalRequested,
    ApprovalResolved,
    ElicitationRequested,
    ElicitationResolved,
    Event,
    ToolCallEnd,
)
from nbagent.protocol.ops import POLICIES
from nbagent.sandbox import SANDBOX_MODES
from nbagent.textsafe import VisibleWriter

POLICY_HELP = (
    "which calls run without asking (default: on-request, or approval_policy from the config). "
    "Nothing can be asked here, so a call that would ask is declined and the model is told; "
    "full-auto runs every call"
)
TABLE_WIDTH = 100
MCP_SERVER = "nbagent.server.cli:main_mcp_server"
"""``nbagent mcp-server`` is the MCP-server front end's own command (``python -m nbagent.server``),
handed over by name: the front ends never import each other."""


def _text(change: Change | None) -> str:
    """One human-readable line (or fragment, for streamed text) per change worth showing."""
    match change:
        case MessageChanged(message=message, delta=delta):
            return "\n" if message.done else delta
        case Configured(header=header):
            return f"[model: {header['model_label']} | policy: {header['policy']} | thread: {header['thread']}]\n"
        case CardChanged(card=card, part="begun"):
            where = f" ({card.server}/{card.raw_tool})" if card.server else ""
            return f"-> {card.tool}{where} {json.dumps(card.arguments)}\n"
        case CardChanged(part="output", delta=delta):
            return delta  # the command's output as it comes, between the call's -> and <- lines
        case CardChanged(card=card, part="changes") if card.applied:
            return "".join(f"  {line}\n" for line in change_lines(card))  # the files a patch changed
        case CardChanged(card=card, part="sandbox_denied"):
            return f"  {denial_line(card)}\n"
        case CardChanged(card=Card(end=ToolCallEnd() as end), part="ended"):
            mark = "x" if end.is_error else "<-"
            first = end.output.splitlines()[0][:200] if end.output else ""
            return f"{mark} {end.tool} [{end.status}, {end.duration_ms:.0f} ms] {first}\n"
        case CardChanged(card=Card(approval=Approval(ask=ApprovalRequested() as ask)), part="asked"):
            changes = f"{changes_text(ask.changes)}\n" if ask.changes else ""  # what it would change, as a diff
            return f"? approval needed for {ask.tool}: {ask.reason}\n{changes}"
        case CardChanged(card=Card(approval=Approval(answer=ApprovalResolved() as answer)), part="decided"):
            return f"  {answer.decision} by {answer.by}" + (f": {answer.message}" if answer.message else "") + "\n"
        case QuestionChanged(question=Question(answer=ElicitationResolved() as answer)):
            return f"  answered {answer.action} by {answer.by}\n"
        case QuestionChanged(question=Question(ask=ElicitationRequested() as ask)):
            return f"? {ask.server} asks: {ask.message}\n"
        case ServerChanged(server=server) if server.status in ("ready", "failed"):
            detail = f"{server.tools} tools" if server.status == "ready" else server.error
            return f"[mcp {server.name}: {server.status}: {detail}]\n"
        case LoginChanged(login=login) if login.done:
            return f"[mcp {login.server}: signed in]\n"
        case LoginChanged(login=login):
            return f"[mcp {login.server}: sign in by opening this link in your browser:\n  {login.url}\n]\n"
        case Warned(message=message):
            return f"warning: {message}\n"
        case Failed(message=message) | Ended(ending=Ending(status="failed", reason=message)):
            return f"error: {message}\n"
        case Ended(ending=Ending(status="aborted", reason=reason)):
            return f"[turn aborted: {reason}]\n"
        case Compacted(compaction=compaction):
            return f"[{describe_compaction(compaction)}]\n"
    return ""


def _problem(change: Change | None) -> str | None:
    """What went wrong, for a change a person reads on stderr apart from what the turn did
    (``""`` for a warning, which may repeat); ``None`` for everything else."""
    match change:
        case Warned():
            return ""
        case Failed(message=message) | Ended(ending=Ending(status="failed", reason=message)):
            return message
    return None


class _Printer:
    """``nbagent run``'s lines, drawn from the turn model: problems on stderr, the same error
    (found at start and again by the turn) once. Server and model text: controls shown, not obeyed."""

    def __init__(self) -> None:
        self.model = TurnModel()
        self._shown_errors: set[str] = set()

    def show(self, event: Event) -> None:
        change = self.model.apply(event)
        problem = _problem(change)
        if problem:
            if problem in self._shown_errors:
                return
            self._shown_errors.add(problem)
        out = VisibleWriter(sys.stderr if problem is not None else sys.stdout)
        if isinstance(change, Ended) and self.model.usage is not None:
            # once, after the turn's text: a request's count can come before its last words
            print(f"[{usage_text(self.model.usage, self.model.thread_usage)}]", flush=True)
        out.write(_text(change))
        out.flush()


async def _turn(args: argparse.Namespace, thread: str | None) -> int:
    """One turn on a new or resumed thread. Until its model is known to start, the events are
    held: a turn that cannot start (no model, no key, no script) prints only why, on stderr, and a
    new thread it would have run on is never written."""
    from nbagent.core.session import Session

    as_json: bool = args.json
    out = sys.stdout
    held: list[Event] = []
    holding = True
    printer = _Printer()

    def show(event: Event) -> None:
        if holding:
            held.append(event)
            return
        try:  # redacted as the rollout is (``Session.subscribe``): a terminal's output is kept too
            print_one(event)
        except BrokenPipeError:
            _reader_gone()

    def print_one(event: Event) -> None:
        if as_json:
            out.write(event.model_dump_json() + "\n")
            out.flush()
            return
        printer.show(event)

    config = load_config(args.cwd, overrides={"sandbox_mode": args.sandbox})
    _home(config)
    session = Session(model=args.model, policy=args.policy, cwd=args.cwd, config=config, thread=thread, entry="cli")
    session.subscribe(show)
    async with session:
        try:
            session.model_client()
        except (ConfigError, ModelError):
            for event in held:  # a warning may say why (a config file not read): then the error
                if event.msg.type == "warning":
                    printer.show(event)
            raise
        holding = False
        for event in held:
            show(event)
        result = await session.run(args.goal)
    return 0 if result.ok else 1


async def _compact(args: argparse.Namespace) -> int:
    """``nbagent compact THREAD``: summarise a saved thread for the model; its record stays whole."""
    from nbagent.core.session import Session
    from nbagent.protocol import Compact, ContextCompacted

    config = load_config(args.cwd)
    _home(config)
    async with Session(model=args.model, cwd=args.cwd, config=config, thread=args.thread, entry="cli") as session:
        event = await session.perform(Compact())
    print(describe_compaction(event) if isinstance(event, ContextCompacted) else f"thread {args.thread} has nothing to compact yet")
    return 0


def _export(args: argparse.Namespace) -> int:
    """``nbagent export replay THREAD -o FILE``: a recorded thread as a replay script."""
    from nbagent.core.thread import rollout_secrets
    from nbagent.models.replay_export import ExportError, export_thread

    config = load_config(args.cwd)
    try:
        thread, script, warnings = export_thread(
            config.home_path, args.thread, Path(args.output), force=args.force, secrets=rollout_secrets(config)
        )
    except ExportError as exc:
        raise BadInput(str(exc)) from None
    for warning in warnings:
        print(f"warning: {warning}", file=sys.stderr)
    print(f"wrote {args.output}: {plural(len(script['responses']), 'response')} from thread {thread}")
    return 0


def _threads(args: argparse.Namespace) -> int:
    from nbagent.store import ThreadStore

    config = load_config(args.cwd)
    with ThreadStore(_home(config)) as store:
        threads = store.list_threads(limit=args.limit + 1)
        for warning in store.take_warnings():
            print(f"warning: {warning}", file=sys.stderr)
    if len(threads) > args.limit:
        threads = threads[: args.limit]
        print(f"(the {args.limit} most recently updated; more are saved: --limit N)", file=sys.stderr)
    if args.json:
        print(json.dumps([t.model_dump(mode="json") for t in threads]))
        return 0
    if not threads:
        print(f"no threads under {config.home_path}")
    for t in threads:
        when = datetime.fromtimestamp(t.updated_at).strftime("%Y-%m-%d %H:%M")
        turns = plural(t.turns, "turn")
        name, prompt = (" ".join((text or "").split()) for text in (t.name, t.first_prompt))
        print(f"{t.id}  {when}  {turns:>9}  {_cut(name, 16):16}  {_cut(prompt, 60)}")
    return 0


def _rebuild(args: argparse.Namespace) -> int:
    from nbagent.store import ThreadStore

    config = load_config(args.cwd)
    with ThreadStore(_home(config)) as store:
        count = store.rebuild_index()
    print(f"index rebuilt from {count} rollout(s) under {config.home_path}")
    return 0


def _servers(config: Config, warnings: list[str]) -> Any:
    """The configured MCP servers, started without a session (``nbagent.kit.servers``)."""
    warnings.extend(config.warnings)  # keys read but not honoured
    return servers.server_manager(config, _home(config) / "logs", warnings)


async def _offered(args: argparse.Namespace) -> int:
    """``nbagent resources|prompts``: what the servers offer besides tools (``nbagent.mcp.offers``)."""
    from nbagent.mcp import offers

    words = [w for w in (args.server, *args.rest) if w is not None]
    if args.command == "resources" and len(words) > 2:
        raise BadInput(f"usage: nbagent {offers.RESOURCES_USAGE}")
    try:
        offers.prompt_arguments(words[2:] if args.command == "prompts" else [])
    except ValueError as exc:
        raise BadInput(str(exc)) from None
    warnings: list[str] = []
    async with _servers(load_config(args.cwd), warnings) as mcp:
        fetch = offers.resources if args.command == "resources" else offers.prompts
        try:
            print(await fetch(mcp, words))
        except Exception as exc:  # noqa: BLE001 - a server's refusal is one line, not a traceback
            return fail(f"nbagent {args.command}", str(exc) or type(exc).__name__, 1)
    for warning in warnings:
        print(f"warning: {warning}", file=sys.stderr)
    return 0


async def _tools(args: argparse.Namespace) -> int:
    """The catalogue straight from the MCP servers: no session, so no thread is created. A
    tool's approval is what a call does under the configured policy, as ``inspect tools`` says."""
    from nbagent.core.inspect import effective_approval

    warnings: list[str] = []
    config = load_config(args.cwd)
    policy = config.approval_policy
    async with _servers(config, warnings) as mcp:
        specs = mcp.list_tools()
        status = list(mcp.status().values())
    rows: list[dict[str, Any]] = []
    for s in specs:
        approval, why = effective_approval(s, policy)
        rows.append({
            "name": s.name,
            "server": s.server,
            "raw_tool": s.raw_name,
            "title": s.display_name,
            "annotations": s.annotations.model_dump(exclude_none=True) if s.annotations else {},
            "approval": approval,
            "approval_why": why,
            "approval_mode": s.approval_mode,
            "source": s.source,
        })  # fmt: skip
    if args.json:
        servers = [s.model_dump(mode="json") for s in status]
        print(json.dumps({"servers": servers, "policy": policy, "tools": rows, "warnings": warnings}, ensure_ascii=False))
    else:
        _print_tool_table(status, rows, warnings, policy, unread=config.unread)
    failed = [s for s in status if s.required and s.state != "ready"]
    if failed:
        names = ", ".join(repr(s.name) for s in failed)
        return fail("nbagent tools", f"required MCP server {names} did not start (its error is listed above)", 1)
    return 0


def _print_tool_table(
    status: list[Any], rows: list[dict[str, Any]], warnings: list[str], policy: str, *, unread: Unread | None
) -> None:
    """Servers (a failed one with its error), then one line per tool, each cut to fit; with no
    server, why the folder's own config was not read, when that is why."""
    if not status:
        print(unread.no_tools("no MCP servers configured") if unread else "no MCP servers configured")
    for s in status:
        if s.state == "ready":
            detail = f"{s.tools} tool" + ("" if s.tools == 1 else "s")
        else:
            last = (s.stderr_tail or "").strip().splitlines()[-1:]
            detail = " ".join(filter(None, [s.error, *(f"(stderr: {line.strip()})" for line in last)]))
        required = " required" if s.required else ""
        print(f"{_cut(s.name, 24):24}  {s.state + required:16}  {detail}")
    if rows:
        print()
        print(f"APPROVAL: what a call does under policy '{policy}' (runs, asks, or declined unasked)")
        print(f"{'TOOL':40}  {'SERVER':16}  {'APPROVAL':8}  {'HINTS':16}  TITLE")
    for row in rows:
        hints = ",".join(k.removesuffix("_hint") for k, v in row["annotations"].items() if v is True)
        line = (f"{_cut(row['name'], 40, middle=True):40}  {_cut(row['server'] or '-', 16):16}  "
                f"{row['approval']:8}  {_cut(hints, 16):16}  ")
        print(line + _cut(row["title"] or "", max(12, TABLE_WIDTH - len(line))))  # server text: stdout shows controls
    for warning in warnings:
        print(f"warning: {warning}")


def _cut(text: str, width: int, *, middle: bool = False) -> str:
    """``text`` in at most ``width`` characters; what is cut becomes one ellipsis. ``middle``
    keeps both ends (a tool name's distinguishing part is its end)."""
    if len(text) <= width:
        return text
    if not middle:
        return text[: width - 1] + "…"
    head = (width - 1) // 2
    return text[:head] + "…" + text[len(text) - (width - 1 - head):]


def _home(config: Config) -> Path:
    """The home folder, created if missing; a home that is not a folder is bad input."""
    home = config.home_path
    if home.exists() and not home.is_dir():
        raise BadInput(f"home {home} is not a folder (set by $NBAGENT_HOME or the 'home' key)")
    home.mkdir(mode=0o700, parents=True, exist_ok=True)  # threads, index and logs: the user's alone
    return home


def _thread_ref(value: str) -> str:
    if not value.strip():
        raise argparse.ArgumentTypeError("a thread id or name is required, got an empty one")
    return value


def _parser() -> tuple[Parser, dict[str, Parser]]:
    parser = Parser(prog="nbagent", description="An agent runtime for Jupyter notebooks.")
    parser.add_argument("--version", action="version", version=f"nbagent {__version__}")
    cwd_option(parser, default=None)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    def turn_args(p: argparse.ArgumentParser) -> None:
        p.add_argument("-m", "--model", help="model name, or replay:FILE for a scripted model")
        p.add_argument("--policy", choices=POLICIES, help=POLICY_HELP)
        p.add_argument("--sandbox", choices=SANDBOX_MODES, help="the MCP servers' sandbox (default: sandbox_mode)")
        p.add_argument("--json", action="store_true", help="one JSON event per line")
        cwd_option(p)

    run = sub.add_parser("run", help="run one turn headless and print its events")
    turn_args(run)
    run.add_argument("goal", help="what to ask (the turn's prompt)")
    resume = sub.add_parser(
        "resume", help="continue a thread with one more turn",
        description="Continue a thread with one more turn, on the model, provider and approval policy it ran with "
                    "(-m and --policy choose others).",
    )
    turn_args(resume)
    resume.add_argument("thread", type=_thread_ref, help="the thread's id, name or a unique id prefix (nbagent threads)")
    resume.add_argument("goal", help="what to ask next")
    compact = sub.add_parser("compact", help="summarise a thread for the model now (the record keeps every item)")
    compact.add_argument("-m", "--model", help="the model that writes the summary (default: the thread's)")
    cwd_option(compact)
    compact.add_argument("thread", type=_thread_ref)
    threads = sub.add_parser("threads", help="list threads")
    threads.add_argument("--json", action="store_true")
    threads.add_argument("--limit", type=positive(int), default=50, help="how many, most recently updated first (default 50)")
    export = sub.add_parser("export", help="write a recorded thread as a replay script (replay:FILE plays it offline)")
    export.add_argument("kind", choices=["replay"])
    export.add_argument("thread", type=_thread_ref)
    export.add_argument("-o", "--output", required=True, help="the script file to write")
    export.add_argument("--force", action="store_true", help="overwrite the script file if it exists")
    cwd_option(export)
    index = sub.add_parser("index", help="the thread index")
    index.add_argument("action", choices=["rebuild"])
    tools = sub.add_parser("tools", help="the tool catalogue the model sees, and each MCP server's state")
    tools.add_argument("--json", action="store_true", help="servers (with errors) and tools as one JSON object")
    offered = {}
    for kind, what, more in (("resources", "the resources", "URI"), ("prompts", "the prompts", "NAME [KEY=VALUE]...")):
        offered[kind] = p = sub.add_parser(kind, help=f"{what} the MCP servers offer; with SERVER {more}, read one")
        p.add_argument("server", nargs="?", help="only this server")
        p.add_argument("rest", nargs="*", metavar=more.split()[0], help=f"with SERVER: {more}")
        cwd_option(p)
    sub.add_parser("mcp", help="manage MCP servers: list, get, add, remove, login, logout, import", add_help=False)
    sub.add_parser("inspect", help="what the runtime sees and sends: tools, request, turn, wire (see: nbagent inspect --help)",
                   add_help=False)
    sub.add_parser("mcp-server", help="serve nbagent as an MCP server (see: nbagent mcp-server --help)", add_help=False)
    trust = cli_trust.add_parser(sub)
    undo = cli_undo.add_parser(sub)
    demo = sub.add_parser(
        "demo", help="run the quickstart walkthrough offline",
        description="Run the quickstart notebook offline (a scripted model, a real MCP server), answering its "
                    "approval and its question as a person would, and say what ran. Each run starts clean: "
                    "the work folder a previous run left in the output folder is replaced.",
    )
    demo.add_argument("--output", default="build/demo", help="where the executed notebook goes")
    return parser, {"run": run, "resume": resume, "compact": compact, "threads": threads, "export": export, "index": index, "tools": tools, "trust": trust, "undo": undo, "demo": demo, **offered}


def _parse(argv: list[str]) -> argparse.Namespace:
    """Parse, naming an unknown flag even where a command is missing (argparse would only say
    the command is required)."""
    parser, commands = _parser()
    args, unknown = parser.parse_known_args(argv)
    where = commands.get(args.command, parser)
    if unknown:
        where.error(f"unrecognized arguments: {' '.join(unknown)}")
    if args.command is None:
        parser.error(f"a command is required: one of {', '.join(commands)}, inspect, mcp, mcp-server")
    return args


def _not_a_folder(prog: str, cwd: str | None) -> int:
    """The exit code refusing ``-C DIR`` that is not a folder (else its config would silently be
    none); 0 when it is one or none was given."""
    if cwd is None or Path(cwd).is_dir():
        return 0
    return fail(prog, f"-C {cwd}: not a folder")


def _reader_gone() -> None:
    """Whoever read stdout left (``| head -1``): what is still printed goes nowhere, so the turn
    ends and is recorded as it would have been, with no error for every event after."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["mcp-server"]:
        from nbagent.gcpause import gc_paused

        with gc_paused():  # its client waits for `initialize`: ~10 % of the import is the collector's
            main_mcp_server = pkgutil.resolve_name(MCP_SERVER)

        return int(main_mcp_server(argv[1:]))
    if (mcp := cli_mcp.invoked(argv)) is not None:
        return _not_a_folder("nbagent mcp", mcp[0]) or cli_mcp.main(mcp[1], cwd=mcp[0])
    if (inspect := cli_mcp.invoked(argv, "inspect")) is not None:
        return _not_a_folder("nbagent inspect", inspect[0]) or cli_inspect.main(inspect[1], cwd=inspect[0])
    args = _parse(argv)
    prog = f"nbagent {args.command}"
    return _not_a_folder(prog, args.cwd) or run_command(prog, lambda: _command(args), bad=(ModelError, KeyError))


def _command(args: argparse.Namespace) -> int:
    """The command's exit code; its failures are said by ``run_command``."""
    if args.command == "run":
        return signals.run(_turn(args, None))
    if args.command == "resume":
        return signals.run(_turn(args, args.thread))
    if args.command == "compact":
        return signals.run(_compact(args))
    if args.command == "threads":
        with contextlib.redirect_stdout(sys.stdout if args.json else VisibleWriter(sys.stdout)):
            return _threads(args)  # thread names and prompts: anyone's text, controls shown
    if args.command == "index":
        return _rebuild(args)
    if args.command == "export":
        return _export(args)
    if args.command == "tools":
        with contextlib.redirect_stdout(sys.stdout if args.json else VisibleWriter(sys.stdout)):
            return signals.run(_tools(args))
    if args.command in ("resources", "prompts"):
        with contextlib.redirect_stdout(VisibleWriter(sys.stdout)):
            return signals.run(_offered(args))
    if args.command == "undo":
        return cli_undo.main(args)
    if args.command == "trust":
        print(folder_trust.run(args, args.cwd))
        return 0
    if args.command == "demo":
        from nbagent.kit.demo import run_demo

        run_demo(Path(args.output))
        return 0
    return 2


if __name__ == "__main__":
    sys.exit(main())
