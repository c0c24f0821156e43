"""``%agent`` sub-commands: status, threads, history, MCP servers and what they offer, stop, approve/deny.

Commands that need the event loop (thread switches, MCP add/restart/remove) run as tasks and
print their outcome into the cell that asked, through the captured cell context.
"""

from __future__ import annotations

import asyncio
import json
import os
import shlex
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple, TypeVar

from IPython.display import display

from nbagent.core.context import describe as describe_compaction
from nbagent.core.usage import tokens_line
from nbagent.kit.args import BadInput
from nbagent.kit.labels import model_text, plural, policy_text
from nbagent.kit.ops import read_now
from nbagent.mcp import offers
from nbagent.notebook.agent import KernelAgent
from nbagent.notebook.cellctx import CellContext
from nbagent.notebook.frontend_kind import KINDS
from nbagent.notebook.login import LoginLinks
from nbagent.notebook.options import LINE_USAGE, UsageError
from nbagent.notebook.startup import status_line
from nbagent.notebook.views import Header, show_turn
from nbagent.protocol import (
    AddMcpServer,
    ApprovalDecision,
    Compact,
    ContextCompacted,
    Event,
    ListMcpTools,
    ListThreads,
    McpOffers,
    NewThread,
    ReadMcpOffers,
    RemoveMcpServer,
    RestartMcpServer,
    ResumeThread,
    ThreadList,
    TurnFailed,
    UndoCompleted,
)
from nbagent.textsafe import one_line

if TYPE_CHECKING:
    from nbagent.config import McpServerConfig
    from nbagent.core.session import Session
    from nbagent.core.snapshot import SessionSnapshot

T = TypeVar("T")


def _out(text: str) -> None:
    print(text)


def _shown(now: SessionSnapshot, text: str) -> str:
    """``text`` as a cell may show it: the thread's secrets redacted, as in its rollout and
    widgets, and what servers and models wrote kept to one inert line (no escapes, no bidi)."""
    return one_line(now.redactor.text(text))


def _later(agent: KernelAgent, coro_fn: Callable[[Session], Awaitable[T]], done: str | Callable[[Session, T], str]) -> None:
    """Run ``coro_fn(session)`` after the session is open; print ``done`` (a format string, or a
    function of the session and the result) or the error, in this cell."""
    cell = CellContext()

    async def job() -> None:
        try:
            session = await agent.ready()
            result = await coro_fn(session)
            cell.run(print, done(session, result) if callable(done) else done.format(result=result))
        except Exception as exc:
            cell.run(print, f"%agent: {exc}", file=sys.stderr)

    try:
        asyncio.get_running_loop()
    except RuntimeError:
        # A plain terminal runs its event loop only while a cell awaits: run the command now,
        # on IPython's loop (the one the session's tasks live on), or it would never happen.
        agent.shell.loop_runner(job())
        return
    agent.spawn(job())


def _server_line(session: Any, name: str) -> str:
    st = session.snapshot().servers.get(name)
    if st is None:
        return f"mcp server {name}: not configured"
    log = f"\n  log: {st.log_path}" if st.state == "failed" and st.log_path else ""
    return f"mcp server {name}: {status_line(st)}{log}"


def _known_server(agent: KernelAgent, name: str) -> None:
    s = agent.session
    names = list(s.snapshot().servers) if s is not None else []
    if s is not None and name not in names:
        raise UsageError(f"no MCP server named {name!r} (configured: {', '.join(names) or 'none'})")


def status(agent: KernelAgent) -> None:
    s = agent.session
    if s is None:
        state = (
            f"failed to open: {agent.error}" if agent.error
            else "opening…" if agent.opening
            else "not open yet (it opens with the first %%agent cell)"
        )
        _out(f"nbagent session: {state}")
        return
    c, now = agent.configured, s.snapshot()
    label = model_text(c.model_label, c.scripted) if c else (now.model_name or "no model configured")
    lines = [
        f"model:    {label}",
        f"thread:   {_shown(now, now.thread_name) + ' ' if now.thread_name else ''}({now.thread_id}), {len(now.items)} items",
        f"policy:   {policy_text(now.policy)}",
        f"frontend: {agent.frontend()}",
        f"turn:     {'running ' + (now.current_turn_id or '') if now.running else 'idle'}",
    ]
    window, limit = now.context_window, now.context_limit
    room = f" of {window:,} (compacts past {limit:,})" if window and limit else " (window unknown: set model_context_window)"
    lines.append(f"context:  ~{now.context_tokens:,} tokens{room}")
    lines.append(f"tokens:   {tokens_line(now.thread_usage, now.home)}")
    if now.instructions:
        lines.append(f"instructions: nbagent config ({len(now.instructions.encode()):,} B)")
    lines.extend(f"instructions: {line}" for line in now.project_docs.describe())
    lines.append("mcp:      " + (", ".join(f"{n} {status_line(st)}" for n, st in now.servers.items()) or "no servers"))
    lines.extend(_sandbox_lines(agent, now))
    lines.extend(f"warning:  {one_line(w)}" for w in agent.session_warnings)  # e.g. a config file not read
    for call_id, req in now.pending_approvals.items():
        asked = _shown(now, f"{req.tool} {json.dumps(req.arguments, ensure_ascii=False)}")
        shown = one_line(call_id)  # the model's words: one line, whatever it put in them
        lines.append(f"pending approval {shown}: {asked}  (%agent approve|deny {shown})")
    for rid, question in now.pending_elicitations.items():
        lines.append(f"pending question {rid} from {question.server}: {_shown(now, question.message)}")
    _out("\n".join(lines))


def _sandbox_lines(agent: KernelAgent, now: SessionSnapshot) -> list[str]:
    """The ``shell`` tool's sandbox and each stdio server's, in ``nbagent mcp list``'s words."""
    config = agent.config
    if config is None:
        return []
    from nbagent.kit.servers import sandbox_text

    lines = [f"sandbox:  shell {agent.shell_tools.policy.describe()}"] if agent.shell_tools else []
    lines.extend(
        f"sandbox:  {name} {sandbox_text(name, cfg, config)}"
        for name, cfg in now.mcp_servers.items() if name in now.servers and cfg.transport == "stdio"
    )  # fmt: skip
    return lines


THREADS_SHOWN = 50
"""How many saved threads ``%agent threads`` lists unless told (``N`` or ``all``)."""


def threads(agent: KernelAgent, args: list[str]) -> None:
    s = agent.session
    if s is None:
        return status(agent)
    word = args[0] if args else str(THREADS_SHOWN)
    if word != "all" and not (word.isascii() and word.isdigit() and int(word) > 0):
        raise UsageError(f"threads takes a number of threads or 'all', not {word!r}; usage:\n{_usage('threads')}")
    shown = None if word == "all" else int(word)
    listed = read_now(s, ListThreads(limit=None if shown is None else shown + 1))
    rows = listed.threads if isinstance(listed, ThreadList) else []
    if not rows:
        _out("no threads yet")
        return
    now = s.snapshot()
    for t in rows[:shown]:
        mark = "*" if t.id == now.thread_id else " "
        when = time.strftime("%Y-%m-%d %H:%M", time.localtime(t.updated_at))
        name = _shown(now, t.name or "-")
        _out(f"{mark} {t.id}  {name:<16} {when}  {plural(t.turns, 'turn')}  {_shown(now, repr((t.last_prompt or '')[:60]))}")
    if shown is not None and len(rows) > shown:
        _out(f"(the {shown} most recently updated; more are saved: %agent threads all, or %agent threads N)")


def history(agent: KernelAgent) -> None:
    s = agent.session
    if s is None:
        return status(agent)
    now = s.snapshot()
    if not now.items:
        _out("(empty thread)")
    for item in now.items:
        d = item.model_dump()
        if item.type == "approval":  # a decision's row says what was decided, not what was asked
            text = f"{d['decision']} by {d['by']}" + (f": {d['message']}" if d.get("message") else "")
        elif item.type == "elicitation":
            text = f"{d['action']} by {d['by']}"
        else:
            text = d.get("text") or d.get("summary") or d.get("output") or d.get("arguments") or ""
        name = d.get("name") or d.get("tool") or d.get("server") or ""
        _out(_shown(now, f"{item.type:<22} {name:<28} {str(text)[:100]!r}"))


def mcp(agent: KernelAgent, args: list[str]) -> None:
    from nbagent.kit import (
        servers,  # the verbs' parsers and texts: loaded at the first ``%agent mcp``, not with the session
    )

    s = agent.session
    if not args:
        if s is None:
            return status(agent)
        now = s.snapshot()
        for name, st in now.servers.items():
            _out(f"{name}: {st.state} ({st.transport}{', ' + st.protocol_version if st.protocol_version else ''})" + (f" — {st.error}" if st.error else ""))
        from nbagent.core.inspect import effective_approval  # loaded with the session already

        for spec in now.tools:
            raw = f"{spec.server}/{spec.raw_name}" if spec.server else spec.raw_name or spec.name
            effect, _ = effective_approval(spec, now.policy, now.knows(spec))
            _out(f"  {spec.name:<40} {raw:<32} approval {effect}{' (read-only)' if spec.read_only else ''}")
        return
    sub, rest = args[0], args[1:]
    if sub in ("help", "-h", "--help"):
        _expect("mcp help", rest)
        _out(_usage("mcp"))
    elif sub == "restart":
        _expect("mcp restart", rest, least=1, most=1)
        _known_server(agent, rest[0])
        _later(agent, lambda sess: sess.perform(RestartMcpServer(name=rest[0])),
               lambda sess, _ok: _server_line(sess, rest[0]) + " (restarted)")
    elif sub in servers.VERBS:
        try:
            _verb(agent, servers.parse(args, prog="mcp"))
        except servers.Finished:
            pass  # --help was printed
    else:
        raise UsageError(f"unknown mcp command {' '.join(args)!r}; mcp [{' | '.join(servers.VERBS)} | restart NAME] ...")


def _verb(agent: KernelAgent, words: Any) -> None:
    """``%agent mcp VERB ...`` as ``nbagent mcp VERB ...`` does it, on the files of the session's
    folder; what changes in the files changes in the running session too."""
    from nbagent.config import load_config
    from nbagent.kit import servers

    s = agent.session
    now = s.snapshot() if s is not None else None
    cwd = Path(now.cwd if now is not None else os.getcwd())
    if words.verb == "list":
        statuses = dict(now.servers) if now is not None else None  # the session's servers are connected already
        config = load_config(cwd)
        _out(json.dumps(servers.list_json(config, statuses)) if words.json else servers.list_text(config, statuses))
    elif words.verb == "get":
        config = load_config(cwd)
        _out(json.dumps(servers.server_view(config, words.name)) if words.json else servers.get_text(config, words.name))
    elif words.verb == "add":
        name, entry = servers.add_entry(words)
        added = servers.add(cwd, name, entry, user=words.user)
        _out(added.text)
        if added.warning:
            _out(f"warning: {added.warning}")
        _start(agent, cwd, [name])
    elif words.verb == "remove":
        name = words.name
        running = now is not None and name in now.servers
        try:
            _out(servers.remove(cwd, name))
        except servers.UsageProblem:
            if not running:
                raise
        if running:
            _later(agent, lambda sess: sess.perform(RemoveMcpServer(name=name)), f"mcp server {name} removed")
    elif words.verb == "import":
        report = servers.import_servers(words.tool, cwd, dry_run=words.dry_run, files=words.files, user=words.user)
        _out(report.text)
        _start(agent, cwd, [] if words.dry_run else report.added)
    elif words.verb == "logout":
        _out(servers.logout(load_config(cwd), words.name))
    else:
        _login(agent, cwd, words.name, words.scopes)


def _login(agent: KernelAgent, cwd: Path, name: str, scopes: str | None) -> None:
    """Sign in in the background: the link is shown in this cell for the person to open (never
    opened by itself); once tokens are stored, a running server restarts to use them."""
    from nbagent.config import load_config
    from nbagent.kit import servers
    from nbagent.protocol import McpLoginCompleted, McpLoginRequired

    cell = CellContext()
    config = load_config(cwd)
    servers.server_named(config, name)  # an unknown name is a usage line now, not a failed task
    links = LoginLinks() if agent.frontend() == "widgets" else None
    if links is not None:
        display(links.widget)

    async def show(url: str) -> None:
        if links is not None:
            links.handle(McpLoginRequired(server=name, url=url))
        else:
            cell.run(print, f"To log in to {name}, open this link in your browser:\n  {url}")

    async def job(session: Session) -> str:
        done = await servers.login(config, name, scopes, show)
        if links is not None:
            links.handle(McpLoginCompleted(server=name))
        if name in session.snapshot().servers:
            await session.perform(RestartMcpServer(name=name))
            return f"{done}\n{_server_line(session, name)}"
        return done

    _later(agent, job, "{result}")


def _start(agent: KernelAgent, cwd: Path, names: list[str]) -> None:
    """Start (or restart) servers just written to the config, as the file now says they are."""
    from nbagent.config import load_config

    servers = load_config(cwd).mcp_servers
    for name in names:
        if name in servers:
            _start_one(agent, name, servers[name])


def _start_one(agent: KernelAgent, name: str, cfg: McpServerConfig) -> None:
    _later(agent, lambda sess: sess.perform(AddMcpServer(name=name, config=cfg)), lambda sess, _ok: _server_line(sess, name))


def offered(agent: KernelAgent, kind: str, args: list[str]) -> None:
    """``%agent resources|prompts ...``: what MCP servers offer besides tools, read on request."""
    if kind == "resources" and len(args) > 2:
        raise UsageError(offers.RESOURCES_USAGE)
    offers.prompt_arguments(args[2:] if kind == "prompts" else [])  # a bad KEY=VALUE is a usage line now
    if args:
        _known_server(agent, args[0])
    _later(agent, lambda sess: sess.perform(ReadMcpOffers(kind=kind, args=args)),  # type: ignore[arg-type]  # resources or prompts
           lambda _sess, offer: offer.text if isinstance(offer, McpOffers) else "")


def answer(agent: KernelAgent, decision: str, args: list[str]) -> None:
    s = agent.session
    if s is None:
        raise UsageError("no session yet")
    pending = s.snapshot().pending_approvals
    if args:
        call_id = args[0]
    elif not pending:
        raise UsageError("no approval is pending")
    elif len(pending) == 1:
        call_id = next(iter(pending))
    else:
        raise UsageError(f"{decision} needs a CALL_ID ({len(pending)} approvals pending: {', '.join(map(one_line, pending))})")
    if call_id not in pending:
        raise UsageError(f"no pending approval {call_id!r} (pending: {', '.join(map(one_line, pending)) or 'none'})")
    message = " ".join(args[1:]) or None if decision == "deny" else None
    s.submit(ApprovalDecision(call_id=call_id, decision=decision, message=message))  # type: ignore[arg-type]  # approve or deny: the verb given
    _out(f"{one_line(call_id)}: {decision}{' — ' + message if message else ''}")


OUTSIDE_HEADER = Header(model_label="outside agent", scripted=False, thread="-", policy="session policy")
"""The serving cell's display shows calls of whatever agent connects, under the session's policy."""


def serve(agent: KernelAgent, args: list[str]) -> None:
    """``%agent serve [--port N] | --stop``: this session's tools for outside agents (nbagent.server)."""
    if args == ["--stop"]:
        handle, agent.server = agent.server, None
        if handle is None:
            _out("not serving")
            return
        agent.spawn(handle.stop())
        _out("stopped serving")
        return
    port = 0  # N in ASCII digits: int() would read "٣" as 3, and "²" is a digit it cannot read
    if args[:1] == ["--port"] and len(args) == 2 and args[1].isascii() and args[1].isdigit() and int(args[1]) <= 65535:
        port = int(args[1])
    elif args:
        raise UsageError("serve [--port N] | serve --stop (N from 0, any free port, to 65535)")
    if agent.server is not None:
        raise UsageError(f"already serving at {agent.server.url} (%agent serve --stop first)")
    view = agent.outside_view = show_turn(agent, OUTSIDE_HEADER, turn_id=None)
    ui = agent.frontend() != "headless"  # known from this cell's request: later calls come from outside

    async def start(session: Session) -> str:
        from nbagent.kit.notebook_server import describe, start_notebook_server

        # The URL is printed once MCP startup is over: an outside agent that lists tools at once
        # gets the whole catalogue, not just the native tools.
        await session.perform(ListMcpTools())
        try:
            agent.server = await start_notebook_server(session, port=port, ui=ui)
        except Exception as exc:  # a port in use: the serving display must not look alive
            why = getattr(exc, "strerror", None) or str(exc)
            view.handle(Event(msg=TurnFailed(message=f"not serving: {why}", code="config")))
            agent.outside_view = None
            raise RuntimeError(why) from None
        return describe(agent.server)

    _later(agent, start, "{result}")


HELP = """%agent commands:
  %agent [status]                 the session: model, thread, policy, MCP servers, pending asks
  %agent help                     this list
  %agent threads [N|all]          saved threads, the 50 (or N) most recent (* marks the current one)
  %agent resume ID                continue a saved thread
  %agent new [NAME]               start a new thread
  %agent history                  the current thread's items: messages, calls, decisions, answers
  %agent mcp                      MCP servers and their tools (model-visible name, raw name, approval)
  %agent mcp list | get NAME      the configured servers (file, auth, state), or one server's settings
  %agent mcp add NAME -- CMD ARGS...   add a stdio server to nbagent.toml and start it (--env KEY=VALUE before --)
  %agent mcp add NAME --url URL   add a streamable HTTP server (--bearer-token-env-var VAR)
  %agent mcp remove NAME          remove a server from its config file(s) and stop it
  %agent mcp import codex|claude|cursor|vscode [--dry-run]   copy another tool's servers into nbagent.toml
  %agent mcp login NAME | logout NAME   OAuth sign-in to an HTTP server (the link is shown), or forget its tokens
  %agent mcp restart NAME
  %agent resources [SERVER]       resources the MCP servers offer (URI, name, description)
  %agent resources SERVER URI     read one resource
  %agent prompts [SERVER]         prompts the MCP servers offer, with their arguments
  %agent prompts SERVER NAME [KEY=VALUE]...   a prompt's messages, filled in
  %agent context [on|off]         let the model see the cells and the kernel's names (types, shapes; no values)
  %agent compact                  summarise this thread for the model now (the record keeps everything)
  %agent inspect tools            each tool: server, raw and visible name, annotations, approval now, schema raw -> exposed
  %agent inspect request [--all]  the last model request as sent: instructions, tools, items;
                                  --all: every request of the last turn, in order
  %agent inspect turn [ID]        a turn's events as a timeline (seq, type, +ms); default the last turn
  %agent inspect wire SERVER [-n N]   the last JSON-RPC messages to and from a server, secrets redacted
                                  (each inspect view takes --json)
  %agent stop                     interrupt the running turn
  %agent undo [TURN] [--force]    put back the cells and files a turn changed (default: the latest that changed any);
                                  --force also overwrites files changed after it
  %agent approve [CALL_ID]        approve a pending call (where widgets do not render)
  %agent deny CALL_ID [REASON]    deny it; the model reads the reason
  %agent serve [--port N]         expose this notebook over MCP to an outside agent (127.0.0.1, token)
  %agent serve --stop
  %agent frontend [widgets|text|headless]   how asks are shown in this kernel
  %agent trust [FOLDER] [--untrusted | --forget | --list]   read this folder's nbagent.toml and .mcp.json (they start programs)
%%agent [-t THREAD] [-m MODEL] [--policy untrusted|on-request|never|full-auto] [--new] [--wait] [-i]
  <the goal, in words>            run a turn (--wait keeps the cell running until it ends)"""


def _usage(cmd: str) -> str:
    """The lines of :data:`HELP` for one command (empty for a command that has none)."""
    return "\n".join(line for line in HELP.splitlines() if line.startswith((f"  %agent {cmd} ", f"  %agent [{cmd}] ")))


def _expect(cmd: str, args: list[str], least: int = 0, most: int | None = 0) -> None:
    """Refuse a word count ``cmd`` does not take (``most`` None: any), naming the first word too
    many, with the command's usage: a word ignored would look accepted."""
    usage = _usage(cmd) or _usage(cmd.split()[0])
    if most is not None and len(args) > most:
        raise UsageError(f"unexpected argument {args[most]!r} for {cmd!r}; usage:\n{usage}")
    if len(args) < least:
        raise UsageError(f"missing argument for {cmd!r}; usage:\n{usage}")


def _resume(agent: KernelAgent, args: list[str]) -> None:
    _later(agent, lambda sess: sess.perform(ResumeThread(thread=args[0])),
           lambda sess, _configured: f"resumed thread {sess.snapshot().thread_id}")


def _new(agent: KernelAgent, args: list[str]) -> None:
    name = args[0] if args else None
    _later(agent, lambda sess: sess.perform(NewThread(name=name)),
           lambda sess, _configured: f"new thread {sess.snapshot().thread_id}" + (f" ({name})" if name else ""))


def _context(agent: KernelAgent, args: list[str]) -> None:
    if args:
        if args[0] not in ("on", "off"):
            raise UsageError("context must be on or off")
        agent.show_context(args[0] == "on")
    _out(f"notebook context: {'on' if agent.context_on else 'off'} (the model "
         f"{'sees' if agent.context_on else 'does not see'} the cells and the kernel's names at each turn's start)")


def _compact(agent: KernelAgent, args: list[str]) -> None:
    _later(agent, lambda sess: sess.perform(Compact()),
           lambda _sess, event: describe_compaction(event) if isinstance(event, ContextCompacted) else "nothing to compact yet")


def _undo(agent: KernelAgent, args: list[str]) -> None:
    words = [a for a in args if a != "--force"]
    _expect("undo", words, most=1)
    _later(agent, lambda sess: agent.undo_turn(sess, words[0] if words else None, force="--force" in args),
           lambda _sess, done: done.message if isinstance(done, UndoCompleted) else str(done))


def _inspect(agent: KernelAgent, args: list[str]) -> None:
    from nbagent.notebook.inspect_view import run_inspect

    run_inspect(agent, args)


def _trust(agent: KernelAgent, args: list[str]) -> None:
    """``%agent trust`` as ``nbagent trust`` does it, for the session's folder by default; the
    servers a newly trusted folder names start now, its other settings with the next session."""
    from nbagent.config import load_config
    from nbagent.kit import trust

    flags, folders = [a for a in args if a.startswith("-")], [a for a in args if not a.startswith("-")]
    if len(flags) > 1 or len(folders) > 1 or not set(flags) <= set(trust.FLAGS):
        raise UsageError(f"trust takes at most one FOLDER and one of {', '.join(trust.FLAGS)}; usage:\n{_usage('trust')}")
    s = agent.session
    cwd = s.snapshot().cwd if s is not None else os.getcwd()
    try:
        _out(trust.run(trust.words(folders[0] if folders else None, flags[0] if flags else None), cwd))
    except BadInput as exc:
        raise UsageError(str(exc)) from None
    config = load_config(cwd)
    if s is None or flags or not any(Path(origin).parent.resolve() == Path(cwd).resolve() for origin in config.sources.values()):
        return
    running = s.snapshot().servers
    _start(agent, Path(cwd), [name for name in config.mcp_servers if name not in running])
    _out("its servers start now; its other settings (model, policy) apply from the next kernel start")


def _frontend(agent: KernelAgent, args: list[str]) -> None:
    if args:
        if args[0] not in KINDS:
            raise UsageError(f"frontend must be one of {', '.join(KINDS)}")
        agent.frontend_override = args[0]
    _out(f"frontend: {agent.frontend()}")


class _Command(NamedTuple):
    """A sub-command and the number of words it takes (``most`` None: any; it checks them)."""

    run: Callable[[KernelAgent, list[str]], None]
    least: int = 0
    most: int | None = 0


COMMANDS: dict[str, _Command] = {
    "status": _Command(lambda agent, _args: status(agent)),
    "help": _Command(lambda _agent, _args: _out(HELP)),
    "threads": _Command(threads, most=1),
    "history": _Command(lambda agent, _args: history(agent)),
    "resume": _Command(_resume, least=1, most=1),
    "new": _Command(_new, most=1),
    "context": _Command(_context, most=1),
    "compact": _Command(_compact),
    "mcp": _Command(mcp, most=None),
    "resources": _Command(lambda agent, args: offered(agent, "resources", args), most=None),
    "prompts": _Command(lambda agent, args: offered(agent, "prompts", args), most=None),
    "inspect": _Command(_inspect, most=None),
    "undo": _Command(_undo, most=None),
    "stop": _Command(lambda agent, _args: _out("interrupting the running turn" if agent.stop() else "no turn is running")),
    "approve": _Command(lambda agent, args: answer(agent, "approve", args), most=1),
    "deny": _Command(lambda agent, args: answer(agent, "deny", args), most=None),
    "serve": _Command(serve, most=None),
    "frontend": _Command(_frontend, most=1),
    "trust": _Command(_trust, most=2),
}
"""Every ``%agent`` sub-command; :func:`run_line` checks the word count of each, in one place."""
ALIASES = {"": "status", "-h": "help", "--help": "help", "?": "help"}


def run_line(agent: KernelAgent, line: str) -> None:
    """``%agent ...``; usage problems print one line and the usage, never a traceback."""
    try:
        args = shlex.split(line)
        word, rest = (args[0], args[1:]) if args else ("", [])
        cmd = ALIASES.get(word, word)
        command = COMMANDS.get(cmd)
        if command is None:
            raise UsageError(f"unknown command {line.strip()!r}")
        _expect(cmd, rest, command.least, command.most)
        command.run(agent, rest)
    except (UsageError, ValueError) as exc:
        print(f"%agent: {exc}\n{LINE_USAGE}", file=sys.stderr)
