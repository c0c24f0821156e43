"""The configured MCP servers, managed with Codex's verbs and flags (``mcp add NAME -- CMD ARGS``,
``--url``, ``--env K=V``, ``--bearer-token-env-var``): what ``nbagent mcp ...`` and
``%agent mcp ...`` both run; each front end parses with ``parser`` and prints the texts.

Every edit goes to the file the server came from (``nbagent.config.edit``), keeping comments
and order; ``list`` reads the files and, with ``--check``, starts each server to show its state.
"""

from __future__ import annotations

import argparse
import functools
import json
import shlex
from collections.abc import Awaitable, Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple, NoReturn

from pydantic import ValidationError

from nbagent.config import SERVER_NAME, Config, ConfigError, McpServerConfig, load_config
from nbagent.config.errors import problems
from nbagent.kit.args import Parser, cwd_option
from nbagent.textsafe import folded

if TYPE_CHECKING:
    from tomlkit.toml_document import TOMLDocument

    from nbagent.config.importers import Plan
    from nbagent.mcp.manager import McpConnectionManager
    from nbagent.mcp.status import ServerStatus

HIDDEN = "*****"
"""Shown for a value of ``env`` or ``http_headers``: they may be secrets. A value ``.mcp.json``
expanded from a variable is shown as written (``${TOKEN}``) wherever it is."""
VERBS = ("list", "get", "add", "remove", "login", "logout", "import")
IMPORT_FROM = ("codex", "claude", "cursor", "vscode")


class UsageProblem(ValueError):
    """Words the verb cannot use; the message is one line naming the problem."""


class Finished(Exception):
    """``--help`` was printed: nothing else to do."""

    def __init__(self, status: int) -> None:
        super().__init__(status)
        self.status = status


class _Parser(Parser):
    """Raises instead of exiting, so ``%agent mcp`` in a kernel shows the line and goes on."""

    def error(self, message: str) -> NoReturn:
        raise UsageProblem(f"{self.prog}: {folded(message)} (see {self.prog} --help)")

    def exit(self, status: int = 0, message: str | None = None) -> NoReturn:
        if message:
            raise UsageProblem(folded(message))
        raise Finished(status)


def parser(prog: str = "nbagent mcp") -> _Parser:
    top = _Parser(prog=prog, description="Manage the MCP servers in nbagent's config files.")
    sub = top.add_subparsers(dest="verb", metavar="VERB", required=True)

    def verb(name: str, text: str) -> argparse.ArgumentParser:
        p = sub.add_parser(name, help=text, description=text)
        cwd_option(p)
        return p

    listing = verb("list", "the configured servers, the file each comes from, and how it authenticates")
    listing.add_argument("--json", action="store_true")
    listing.add_argument("--check", action="store_true", help="start each server and show its state")
    get = verb("get", "one server's settings (env and header values hidden)")
    get.add_argument("name")
    get.add_argument("--json", action="store_true")
    add = verb("add", "add a server (or replace how it starts): NAME -- CMD ARGS..., or NAME --url URL")
    add.add_argument("name")
    add.add_argument("--env", action="append", default=[], metavar="KEY=VALUE", help="for a stdio server")
    add.add_argument("--url", help="a streamable HTTP server")
    add.add_argument("--bearer-token-env-var", metavar="VAR", help="for --url: send $VAR as a bearer token")
    add.add_argument("--user", action="store_true", help="into ~/.nbagent/config.toml, not ./nbagent.toml")
    remove = verb("remove", "remove a server from every config file that has it")
    remove.add_argument("name")
    login = verb("login", "sign in to an HTTP server with OAuth (the link is printed)")
    login.add_argument("name")
    login.add_argument("--scopes", help="comma-separated scopes to ask for (default: the config's scopes)")
    logout = verb("logout", "forget the OAuth tokens stored for a server")
    logout.add_argument("name")
    imp = verb("import", "copy servers from another tool's config into nbagent.toml")
    imp.add_argument("tool", choices=IMPORT_FROM)
    imp.add_argument("--dry-run", action="store_true", help="print what would be written; write nothing")
    imp.add_argument("--from", dest="files", action="append", type=Path, metavar="FILE",
                     help="read this file instead of the tool's usual ones")  # fmt: skip
    imp.add_argument("--user", action="store_true", help="into ~/.nbagent/config.toml, not ./nbagent.toml")
    return top


def parse(argv: list[str], prog: str = "nbagent mcp") -> argparse.Namespace:
    """The verb and its options; for ``add``, the words after the first ``--`` are the command
    (so a server's own ``--flags`` are never read as nbagent's)."""
    head, command = argv, []
    if "--" in argv:
        at = argv.index("--")
        head, command = argv[:at], argv[at + 1 :]
    args = parser(prog).parse_args(head)
    if "--" in argv and args.verb != "add":
        raise UsageProblem(f"{prog} {args.verb}: nothing may follow '--'")
    args.command = command
    if args.verb == "add" and "--" in argv and not command:
        raise UsageProblem(f"{prog} add: a command must follow --")
    return args


# -- what a server is, as list and get show it ---------------------------------------------


def _hidden(values: Mapping[str, str]) -> dict[str, str]:
    return {key: HIDDEN for key in values}


def auth(name: str, cfg: McpServerConfig, config: Config) -> str:
    """How an HTTP server is authenticated, without any secret: a bearer token's variable,
    headers, or OAuth (and whether tokens are stored for it)."""
    if cfg.transport == "stdio":
        return "-"
    if cfg.bearer_token_env_var:
        return f"bearer ${cfg.bearer_token_env_var}"
    from nbagent.mcp.oauth import uses_oauth
    from nbagent.mcp.oauth.storage import backend_for

    if not uses_oauth(cfg):
        return "headers"
    try:
        stored = backend_for(name, cfg.url or "", config).read() is not None
    except ConfigError:  # a keyring asked for and missing: ``login`` says so
        stored = False
    return "oauth (logged in)" if stored else "oauth"


def server_view(config: Config, name: str) -> dict[str, Any]:
    """One server as JSON: every key set in its file (secrets' values hidden) and where from."""
    cfg = server_named(config, name)
    data = cfg.as_written(cfg.model_dump(mode="json", exclude_defaults=True))
    for key in ("env", "http_headers"):
        if key in data:
            data[key] = _hidden(data[key])
    head = {"name": name, "source": config.sources.get(name), "enabled": cfg.enabled, "transport": cfg.transport,
            **({"disabled_by": cfg.disabled_by} if cfg.disabled_by else {})}
    return {**head, "auth": auth(name, cfg, config), "sandbox": sandbox_text(name, cfg, config), **data}


def sandbox_text(name: str, cfg: McpServerConfig, config: Config) -> str:
    """The sandbox a stdio server runs in (``-`` for an HTTP server: it runs elsewhere)."""
    if cfg.transport != "stdio":
        return "-"
    from nbagent.mcp.sandboxed import server_policy

    return server_policy(name, cfg, config).describe()


def sandboxes(config: Config) -> dict[str, str]:
    """Every configured server's sandbox, by name (as ``sandbox_text`` says it)."""
    return {name: sandbox_text(name, cfg, config) for name, cfg in config.mcp_servers.items()}


def _launch(cfg: McpServerConfig) -> str:
    return cfg.as_written(cfg.url) or shlex.join(cfg.as_written([cfg.command or "", *cfg.args]))


def _status_text(status: ServerStatus | None) -> str:
    if status is None:
        return "-"
    if status.state == "ready":
        return f"ready ({status.tools} tool{'' if status.tools == 1 else 's'})"
    if status.state == "disabled" and status.error:
        return status.error  # "disabled by requirements (FILE)"
    return status.state + (f": {status.error}" if status.error else "")


def _cut(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"


def list_text(config: Config, statuses: Mapping[str, ServerStatus] | None = None) -> str:
    """A table of servers: name, transport, enabled, auth, sandbox, command or URL, file (and state)."""
    if not config.mcp_servers:
        return "no MCP servers configured (add one: nbagent mcp add NAME -- CMD ARGS, or NAME --url URL)"
    header = ["NAME", "TRANSPORT", "ENABLED", "AUTH", "SANDBOX", "COMMAND / URL", "SOURCE",
              *(["STATUS"] if statuses is not None else [])]  # fmt: skip
    rows = [header]
    for name in sorted(config.mcp_servers):
        cfg = config.mcp_servers[name]
        state = [_status_text(statuses.get(name))] if statuses is not None else []
        enabled = "yes" if cfg.enabled else f"no, {cfg.disabled_by}" if cfg.disabled_by else "no"
        rows.append([name, cfg.transport or "", enabled, auth(name, cfg, config),
                     sandbox_text(name, cfg, config), _cut(_launch(cfg), 48), config.sources.get(name, "-"), *state])  # fmt: skip
    widths = [max(len(row[i]) for row in rows) for i in range(len(header))]
    return "\n".join("  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip() for row in rows)


def list_json(config: Config, statuses: Mapping[str, ServerStatus] | None = None) -> list[dict[str, Any]]:
    rows = [server_view(config, name) for name in sorted(config.mcp_servers)]
    if statuses is not None:
        for row in rows:
            status = statuses.get(row["name"])
            row["status"] = status.model_dump(mode="json") if status is not None else None
    return rows


def server_named(config: Config, name: str) -> McpServerConfig:
    cfg = config.mcp_servers.get(name)
    if cfg is None:
        raise UsageProblem(f"no MCP server named {name!r} (configured: {', '.join(config.mcp_servers) or 'none'})")
    return cfg


def get_text(config: Config, name: str) -> str:
    lines = [name]
    for key, value in server_view(config, name).items():
        if key == "name":
            continue
        if isinstance(value, list):
            value = shlex.join(value) if key == "args" else ", ".join(map(str, value))
        elif isinstance(value, dict):
            value = ", ".join(f"{k}={v if isinstance(v, str) else json.dumps(v)}" for k, v in value.items())
        elif not isinstance(value, str):
            value = json.dumps(value)
        lines.append(f"  {key}: {value}")
    lines.append(f"  remove: nbagent mcp remove {name}")
    return "\n".join(lines)


# -- edits ---------------------------------------------------------------------------------


def add_entry(args: argparse.Namespace) -> tuple[str, dict[str, Any]]:
    """The ``[mcp_servers.NAME]`` keys ``add`` writes, checked as nbagent will read them."""
    name: str = args.name
    if not SERVER_NAME.match(name):
        raise UsageProblem(f"server name {name!r} must match [a-zA-Z0-9_-]+")
    if bool(args.command) == bool(args.url):
        raise UsageProblem("give either -- CMD ARGS... (a stdio server) or --url URL (an HTTP server)")
    entry: dict[str, Any]
    if args.url:
        if args.env:
            raise UsageProblem("--env is for stdio servers (after -- CMD)")
        entry = {"url": args.url}
        if args.bearer_token_env_var:
            entry["bearer_token_env_var"] = args.bearer_token_env_var
    else:
        if args.bearer_token_env_var:
            raise UsageProblem("--bearer-token-env-var is for --url servers")
        entry = {"command": args.command[0], "args": args.command[1:]}
        env = {}
        for pair in args.env:
            key, equals, value = pair.partition("=")
            if not equals or not key.strip():
                raise UsageProblem(f"--env {pair!r}: must be KEY=VALUE")
            env[key.strip()] = value
        if env:
            entry["env"] = env
    try:
        McpServerConfig.model_validate(entry)
    except ValidationError as exc:
        raise UsageProblem(f"server {name!r}: {problems(exc)}") from None
    return name, entry


def _target(cwd: Path, name: str, user: bool) -> Path:
    """Where ``add`` writes: the TOML file the server already comes from, else the project's
    ``nbagent.toml`` (or the user file). A server from ``.mcp.json`` is redefined in
    ``nbagent.toml``, which is read after it."""
    from nbagent.config import MCP_JSON
    from nbagent.config.edit import project_file, user_file

    if user:
        return user_file()
    try:
        origin = load_config(cwd).sources.get(name)
    except ConfigError:
        origin = None  # a file that does not load is still one to add to; the write says if it cannot
    return Path(origin) if origin and not origin.endswith(MCP_JSON) else project_file(cwd)


class Added(NamedTuple):
    text: str
    """The file that now says how the server starts."""
    warning: str | None
    """Why the server will not start from that file (its folder is not trusted), and the command that fixes it."""


def add(cwd: Path, name: str, entry: Mapping[str, Any], *, user: bool = False) -> Added:
    from nbagent.config.edit import put_server

    path = _target(cwd, name, user)
    replaced = put_server(path, name, entry)
    done = f"Replaced how MCP server '{name}' starts, in {path}" if replaced else f"Added MCP server '{name}' to {path}"
    return Added(done, _not_started(cwd, path, name))


def _not_started(cwd: Path, path: Path, name: str) -> str | None:
    """Why server ``name``, just written to ``path``, will not start: a project file in a folder not trusted."""
    try:
        unread = load_config(cwd).unread
    except ConfigError:
        return None
    if unread is None or path not in unread.files:
        return None
    return f"MCP server {name!r} will not start: {path} is not read: {unread.why}"


def remove(cwd: Path, name: str) -> str:
    """Take ``name`` out of every file that has it, the one read last first."""
    from nbagent.config.edit import layer_files, remove_server

    files = layer_files(cwd)
    removed = [path for path in reversed(files) if remove_server(path, name)]
    if not removed:
        raise UsageProblem(f"no MCP server named {name!r} in {', '.join(map(str, files))}")
    return "\n".join(f"Removed MCP server '{name}' from {path}" for path in removed)


class ImportReport(NamedTuple):
    text: str
    """Each server imported (or that would be), each one skipped, everything not translated."""
    code: int
    """1 when a server could not be imported."""
    added: list[str]


def import_servers(tool: str, cwd: Path, *, dry_run: bool, files: list[Path] | None, user: bool) -> ImportReport:
    from nbagent.config import importers
    from nbagent.config.edit import edited_file, editing, parse_toml, project_file, user_file
    from nbagent.config.trust import refusal
    from nbagent.kit.trust import trusted_projects

    target = user_file() if user else project_file(cwd)
    untrusted = functools.partial(refusal, projects=trusted_projects(), user_file=user_file())
    found = importers.plan(tool, cwd, files, untrusted=untrusted)  # type: ignore[arg-type]  # a parser's choice
    if not found.read and not found.unread:
        where = ", ".join(map(str, importers.source_files(tool, cwd)))  # type: ignore[arg-type]  # a parser's choice
        return ImportReport(f"no {tool} config found (looked in {where})", 1, [])
    if dry_run:
        return _import(found, cwd, target, parse_toml(edited_file(target)), dry_run=True)
    with editing(target) as doc:  # what is configured is read under the lock the write holds: a server added meanwhile stays
        return _import(found, cwd, target, doc, dry_run=False)


def _import(found: Plan, cwd: Path, target: Path, doc: TOMLDocument, *, dry_run: bool) -> ImportReport:
    """Add to ``doc`` (the ``target`` file's, unless ``dry_run``) the servers of ``found`` that no
    config file has yet, and the settings it does not set; the report of what was done."""
    from nbagent.config.edit import add_servers, render_servers

    try:
        configured = dict(load_config(cwd).sources)
    except ConfigError:
        configured = {}
    servers = doc.get("mcp_servers", {})
    configured.update({name: str(target) for name in servers if isinstance(servers, Mapping)})
    settings = {key: value for key, value in found.settings.items() if key not in doc}
    verb = "would import" if dry_run else "imported"
    lines = [f"{verb} {key} = {json.dumps(value)}" for key, value in settings.items()]
    chosen = {}
    for server in found.servers:
        if server.name in configured:
            found.skipped.append(f"{server.source}: server '{server.name}' is already configured in {configured[server.name]} (skipped)")
            continue
        chosen[server.name] = server.table
        lines.append(f"{verb} '{server.name}' from {server.source}")
        lines.extend(f"  note: {note}" for note in server.notes)
    lines.extend(f"skipped: {problem}" for problem in found.skipped)
    lines.extend(found.unread)
    if (chosen or settings) and dry_run:
        lines.append(f"--- would be added to {target}:\n{render_servers(chosen, settings).strip()}")
    elif chosen or settings:
        add_servers(doc, chosen, settings)
        lines.append(f"{len(chosen)} server(s) written to {target}")
    elif found.read and not found.skipped:
        lines.append(f"no MCP servers in {', '.join(map(str, found.read))}")
    return ImportReport("\n".join(lines), 1 if found.skipped or found.unread else 0, list(chosen))


# -- OAuth (nbagent.mcp.oauth does the flow) ------------------------------------------------


async def login(config: Config, name: str, scopes: str | None, on_link: Callable[[str], Awaitable[None]]) -> str:
    """Sign in to ``name`` now; ``on_link`` shows the person the link (never opened here)."""
    from nbagent.core.audit import LOGIN, record_outside
    from nbagent.mcp import oauth

    cfg = server_named(config, name)
    if cfg.disabled_by:
        raise UsageProblem(f"MCP server {name!r} is {cfg.disabled_by}: nothing to sign in to")
    if scopes is not None:
        cfg = cfg.model_copy(update={"scopes": [s.strip() for s in scopes.split(",") if s.strip()]})
    await oauth.login(name, cfg, config, on_link=on_link)
    record_outside(config, LOGIN, server=name, outcome="completed")
    return f"Logged in to MCP server '{name}'"


def logout(config: Config, name: str) -> str:
    from nbagent.core.audit import LOGOUT, record_outside
    from nbagent.mcp import oauth

    if oauth.logout(name, server_named(config, name), config):
        record_outside(config, LOGOUT, server=name, outcome="completed")
        return f"Logged out of MCP server '{name}': its stored OAuth tokens are removed"
    return f"No OAuth tokens stored for MCP server '{name}'"


# -- connecting ----------------------------------------------------------------------------


def server_manager(config: Config, log_dir: Path, warnings: list[str]) -> McpConnectionManager:
    """The configured servers, started without a session (so no thread is created); their
    warnings are gathered in ``warnings``, nothing can be asked and no sign-in is started (a
    server that needs one says to run ``nbagent mcp login``)."""
    from nbagent.mcp.manager import McpConnectionManager
    from nbagent.protocol import ElicitationRequested, EventMsg, WarningEvent
    from nbagent.protocol.elicitation import ElicitOutcome

    def on_event(event: EventMsg) -> None:
        if isinstance(event, WarningEvent):
            warnings.append(event.message)

    async def no_one_to_ask(_request: ElicitationRequested) -> ElicitOutcome:
        return ElicitOutcome(action="decline")

    log_dir.mkdir(parents=True, exist_ok=True)
    return McpConnectionManager(config.mcp_servers, on_event, no_one_to_ask, log_dir, config, sign_in=False)


async def check(config: Config, warnings: list[str]) -> dict[str, ServerStatus]:
    """Each server's state after one start attempt (all at once, each within its timeout)."""
    async with server_manager(config, config.home_path / "logs", warnings) as mcp:
        return mcp.status()
