"""All configured MCP servers behind one ``ToolProvider`` (docs/contracts.md).

Servers start concurrently and each is bounded by its own startup timeout, so a slow or
broken server is reported (with its stderr tail) without holding up the others. The
model-visible catalogue is rebuilt only when a server's tools or state change, in a worker
thread (a big catalogue must not stall the kernel's event loop), and applied on the loop; every
call failure comes back as ``ToolResult(is_error=True)`` naming the server and the tool.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Hashable, Mapping
from pathlib import Path
from typing import Any

import mcp_types as types
from mcp.shared.exceptions import MCPError

from nbagent.config import SERVER_NAME, Config, McpServerConfig
from nbagent.deliver import deliver
from nbagent.mcp.catalog import CatalogBuilder, Completer, ServerTools
from nbagent.mcp.connection import McpConnection
from nbagent.mcp.errors import McpStartupError, McpUnavailable, describe_error
from nbagent.mcp.meta import call_meta
from nbagent.mcp.results import from_call_result
from nbagent.mcp.sandboxed import sandbox_meta
from nbagent.mcp.server_requests import ElicitFn, EventFn
from nbagent.mcp.status import ServerStatus
from nbagent.mcp.wire import WireMessage, given_secrets, secret_sources, server_secrets
from nbagent.protocol import (
    CallInfo,
    EventMsg,
    McpLoginCompleted,
    McpStartupComplete,
    McpStartupUpdate,
    McpToolsChanged,
    PatchChange,
    ToolResult,
    ToolSpec,
    WarningEvent,
)
from nbagent.protocol.tools import ProgressFn
from nbagent.secrets import SecretsKept, process_secrets_version

_DEFAULT_CAP: int = Config.model_fields["max_model_tools"].default
"""``max_model_tools`` for a manager made without a config."""
log = logging.getLogger(__name__)


class McpConnectionManager:
    """Start, route to, watch and stop every MCP server of a session."""

    def __init__(
        self,
        servers: Mapping[str, McpServerConfig],
        on_event: EventFn,
        on_elicit: ElicitFn,
        log_dir: Path,
        config: Config | None = None,
        *,
        sign_in: bool = True,
    ) -> None:
        for name in servers:
            check_server_name(name)
        self._configs: dict[str, McpServerConfig] = dict(servers) if config is None else {
            name: config.requirements.admit(name, cfg)[0] for name, cfg in servers.items()
        }  # a server the administrator's requirements do not admit never starts, whoever built the list
        self._on_event = on_event
        self._on_elicit = on_elicit
        self._log_dir = Path(log_dir)
        self._config = config
        """Passed to connections for OAuth logins (where tokens live, the callback port)."""
        self._sign_in = sign_in
        """``False`` where no one sees events: a server needing a new login fails, naming the verb."""
        self._conns: dict[str, McpConnection] = {}
        self._builder = CatalogBuilder()
        self._completer = Completer()
        self._building: asyncio.Task[None] | None = None
        self._catalog: list[ToolSpec] = []
        self._catalog_key: dict[str, Hashable] = {}
        self._catalog_by_raw: dict[tuple[str, str], ToolSpec] = {}
        self._shown: tuple[tuple[tuple[str, Hashable], ...], list[ToolSpec]] = ((), [])
        self.generation = 0
        """Bumped whenever what ``list_tools`` returns may have changed, so the router knows to
        read it again (and need not otherwise)."""
        self._background: set[asyncio.Task[Any]] = set()
        self._closed = False
        self._sources: dict[str, str] | None = None
        self._kept: dict[str, SecretsKept] = {}
        """Every secret held, and per server those its calls must not carry: read at the first
        call after ``refresh_secrets`` (or a new process secret), never per call."""
        self._kept_version = process_secrets_version()

    # ----- lifecycle ---------------------------------------------------------------------

    async def start(self) -> None:
        """Read the stored OAuth tokens no connection will read (a disabled server's, one with an
        Authorization of its own), so every HTTP server's are secrets from now on; start every
        enabled server concurrently; then emit ``McpStartupComplete``."""
        if self._config is not None and any(cfg.url for cfg in self._configs.values()):
            from nbagent.mcp.oauth import uses_oauth  # the OAuth client, only where HTTP servers are
            from nbagent.mcp.oauth.storage import hold_stored

            unread = [(name, cfg.url) for name, cfg in self._configs.items()
                      if cfg.url and not (cfg.enabled and uses_oauth(cfg))]  # fmt: skip
            if unread:
                await asyncio.to_thread(hold_stored, unread, self._config)
        names = [name for name, cfg in self._configs.items() if cfg.enabled]
        results = await asyncio.gather(*(self._start_one(name) for name in names))
        ready = [name for name, ok in zip(names, results, strict=True) if ok]
        failed = [name for name, ok in zip(names, results, strict=True) if not ok]
        self._emit(McpStartupComplete(ready=ready, failed=failed))

    async def _start_one(self, name: str, *, force_legacy: bool = False) -> bool:
        cfg = self._configs[name]
        conn = McpConnection(
            name, cfg, log_dir=self._log_dir, on_event=self._emit, on_elicit=self._on_elicit,
            on_tools_changed=self._tools_changed, force_legacy=force_legacy, config=self._config,
            sign_in=self._sign_in,
        )  # fmt: skip
        self._conns[name] = conn
        self._emit(McpStartupUpdate(server=name, status="starting"))
        try:
            await conn.start()
        except McpStartupError as exc:
            self._emit(McpStartupUpdate(server=name, status="failed", error=str(exc), stderr_tail=exc.stderr_tail))
            return False
        except asyncio.CancelledError:
            self._emit(McpStartupUpdate(server=name, status="cancelled"))
            raise
        except Exception as exc:  # noqa: BLE001 - a bug in one server's startup must not stop the rest
            log.exception("MCP server %s: unexpected startup failure", name)
            self._emit(McpStartupUpdate(server=name, status="failed", error=f"{type(exc).__name__}: {exc}"))
            return False
        await self._catalog_current()  # "ready" means its tools are in the catalogue
        count = sum(1 for tool in conn.info.tools if cfg.tool_enabled(tool.name))
        self._emit(
            McpStartupUpdate(server=name, status="ready", tools=count, protocol_version=conn.info.protocol_version)
        )
        return True

    async def restart(self, name: str) -> bool:
        """Stop one server (if running) and start it again; ``True`` when it is ready."""
        if name not in self._configs:
            raise KeyError(f"no MCP server named {name!r}")
        old = self._conns.pop(name, None)
        force_legacy = old.force_legacy if old is not None else False
        if old is not None:
            await old.aclose()
        return await self._start_one(name, force_legacy=force_legacy)

    async def add(self, name: str, cfg: McpServerConfig) -> bool:
        """Add (or replace) a server and start it; ``True`` when it is ready."""
        check_server_name(name)
        old = self._conns.pop(name, None)
        if old is not None:
            await old.aclose()
        if self._config is not None:  # what the administrator's requirements let run, said
            cfg, notes = self._config.requirements.admit(name, cfg)
            for note in notes:
                self._emit(WarningEvent(message=note))
        self._configs[name] = cfg
        if not cfg.enabled:
            self.generation += 1
            return False
        return await self._start_one(name)

    async def remove(self, name: str) -> None:
        """Stop a server and forget it; its tools leave the catalogue at once."""
        self._configs.pop(name, None)
        conn = self._conns.pop(name, None)
        if conn is not None:
            await conn.aclose()
            self._emit(McpStartupUpdate(server=name, status="stopped"))

    async def aclose(self) -> None:
        """Stop every server; on return no process started for a server is alive."""
        self._closed = True
        self.generation += 1
        for task in list(self._background):
            task.cancel()
        if self._background:
            await asyncio.wait(self._background, timeout=5.0)
        conns = list(self._conns.values())
        await asyncio.gather(*(conn.aclose() for conn in conns), return_exceptions=True)

    async def __aenter__(self) -> McpConnectionManager:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    # ----- facts -------------------------------------------------------------------------

    @property
    def servers(self) -> dict[str, McpServerConfig]:
        return dict(self._configs)

    def connection(self, name: str) -> McpConnection | None:
        return self._conns.get(name)

    def wire(self, name: str, last: int | None = None) -> list[WireMessage]:
        """``name``'s last JSON-RPC messages, redacted now (``inspect wire``); none before it started."""
        conn = self._conns.get(name)
        return conn.wire.messages(server_secrets(name, conn.cfg, self._config), last) if conn is not None else []

    def status(self) -> dict[str, ServerStatus]:
        out: dict[str, ServerStatus] = {}
        for name, cfg in self._configs.items():
            conn = self._conns.get(name)
            if conn is None:
                out[name] = ServerStatus(
                    name=name, state="disabled" if not cfg.enabled else "stopped", transport=cfg.transport or "stdio",
                    required=cfg.required, error=cfg.disabled_by,
                )  # fmt: skip
                continue
            out[name] = ServerStatus(
                name=name,
                state=conn.state,
                transport=cfg.transport or "stdio",
                protocol_version=conn.info.protocol_version,
                tools=sum(1 for t in conn.info.tools if cfg.tool_enabled(t.name)) if conn.state == "ready" else 0,
                error=conn.error,
                stderr_tail=conn.stderr_tail() if conn.state == "failed" else None,
                pid=conn.pid,
                log_path=str(conn.log_path) if cfg.transport == "stdio" else None,
                required=cfg.required,
            )
        return out

    def instructions(self) -> dict[str, str]:
        """Each ready server's ``instructions`` (uncapped; the caller caps what the model sees)."""
        return {
            name: conn.info.instructions
            for name, conn in self._conns.items()
            if conn.state == "ready" and conn.info.instructions
        }

    def pids(self) -> list[int]:
        """Process ids of every stdio server started so far (for shutdown checks)."""
        return [conn.pid for conn in self._conns.values() if conn.pid is not None]

    # ----- the catalogue -----------------------------------------------------------------

    def list_tools(self) -> list[ToolSpec]:
        """The model-visible catalogue over all ready servers, as last built. A server that is no
        longer ready leaves it at once; new or changed tools show once their build (started here
        if need be) is applied. Calls never rely on it: they check the current definition."""
        ready = self._ready_keys()
        if ready != self._catalog_key:
            self._spawn_build()
            shown = tuple(sorted(ready.items()))
            if self._shown[0] != shown:
                self._shown = (shown, [spec for spec in self._catalog if spec.server in ready])
            return list(self._shown[1])
        return list(self._catalog)

    def complete(self, spec: ToolSpec) -> ToolSpec:
        """``spec`` with the schema the model sees, sanitised now if the build deferred it."""
        return self._completer.complete(spec)

    def _ready_keys(self) -> dict[str, Hashable]:
        """Each ready server's ``_catalog_key``: the catalogue is current when it was built from these."""
        return {name: _catalog_key(conn) for name, conn in self._conns.items() if conn.state == "ready"}

    async def _catalog_current(self) -> None:
        """Wait until the catalogue matches every ready server's current tools."""
        task = self._spawn_build()
        if task is not None:
            await asyncio.shield(task)  # a cancelled caller leaves the build (and the builder) alone

    def _spawn_build(self) -> asyncio.Task[None] | None:
        if self._building is None or self._building.done():
            if self._ready_keys() == self._catalog_key or self._closed:
                return None
            try:
                self._building = asyncio.get_running_loop().create_task(self._build())
            except RuntimeError:  # no loop: nothing can change until there is one
                return None
            self._background.add(self._building)
            self._building.add_done_callback(self._background.discard)
        return self._building

    async def _build(self) -> None:
        """Build in a worker thread until the catalogue is current, applying each result on the
        loop. One build at a time: the builder keeps what it built for the next one."""
        while True:
            key = self._ready_keys()
            if key == self._catalog_key:
                return
            servers: dict[str, ServerTools] = {
                name: (key[name], self._conns[name].cfg, self._conns[name].info.tools) for name in key
            }
            cap = self._config.max_model_tools if self._config is not None else _DEFAULT_CAP
            defer = sum(len(tools) for _, _, tools in servers.values()) > cap
            secrets = secret_sources(self._config, self._configs)
            specs, by_raw, warnings = await asyncio.to_thread(_build, self._builder, servers, defer, secrets)
            self._catalog, self._catalog_by_raw, self._catalog_key = specs, by_raw, key
            self._completer.retain(specs)
            self.generation += 1
            for message in warnings:
                self._emit(WarningEvent(message=message))

    def _tools_changed(self, conn: McpConnection) -> None:
        self._spawn(self._announce_tools(conn))

    async def _announce_tools(self, conn: McpConnection) -> None:
        await self._catalog_current()  # the event means the new tools are in the catalogue
        count = sum(1 for tool in conn.info.tools if conn.cfg.tool_enabled(tool.name))
        self._emit(McpToolsChanged(server=conn.name, tools=count))

    # ----- calls -------------------------------------------------------------------------

    async def current_definition(self, spec: ToolSpec, *, relist: bool = False) -> ToolSpec | str:
        """``spec`` as its server offers it now, once an announced change has been listed
        (DESIGN §5): approvals are checked against this, never against what the model saw.
        A string names why the tool cannot be called; a server that is not connected is left to
        ``call_tool`` to report."""
        server, tool = spec.server or "", spec.raw_name
        conn = self._conns.get(server)
        if conn is None or conn.state != "ready":
            return spec
        try:
            await conn.current_tools(relist=relist)
        except McpUnavailable as exc:
            return f"{exc}; not called"
        if self._catalog_key.get(server) != _catalog_key(conn):
            await self._catalog_current()  # rebuilt if the re-list changed anything
        current = self._catalog_by_raw.get((server, tool))
        if current is None:
            return f"MCP server {server!r} no longer offers the tool {tool!r}; not called"
        return current

    def withheld(self, spec: ToolSpec, arguments: dict[str, Any]) -> str | None:
        """Why ``arguments`` must not reach ``spec``'s server: they hold a secret nbagent keeps
        from it (the API key, another server's token, a process secret; its own are its own).
        ``None`` when they hold none, found by one scan against this server's set."""
        server = spec.server or ""
        if self._kept_version != (version := process_secrets_version()):
            self.refresh_secrets()
            self._kept_version = version
        kept = self._kept.get(server)
        if kept is None:
            if self._sources is None:
                self._sources = secret_sources(self._config, self._configs, credentials_only=True)
            cfg = self._configs.get(server)
            given = given_secrets(server, cfg) if cfg is not None else []
            kept = self._kept[server] = SecretsKept(self._sources, given)
        what = kept.find(arguments)
        if what is None:
            return None
        return (
            f"MCP tool {spec.raw_name!r} on server {server!r}: an argument holds a secret nbagent keeps from this "
            f"server ({what}); not called. Leave it out: a server gets only the secrets it was given"
        )

    async def preview(self, spec: ToolSpec, arguments: dict[str, Any]) -> list[PatchChange]:
        """A server's tool does what its server makes of the arguments: nothing to diff here."""
        return []

    def refresh_secrets(self) -> None:
        """Read the secrets again at the next call (a turn starts; a server or a login changed)."""
        self._sources = None
        self._kept = {}

    async def call_tool(
        self,
        spec: ToolSpec,
        arguments: dict[str, Any],
        call: CallInfo,
        on_progress: ProgressFn | None = None,
    ) -> ToolResult:
        """Route by raw identity; every failure is an error result naming server and tool."""
        server, tool = spec.server or "", spec.raw_name
        where = f"MCP tool {tool!r} on server {server!r}"
        conn = self._conns.get(server)
        if conn is None:
            return ToolResult.error(f"{where}: no such server is configured")
        if conn.state != "ready":
            reason = f" ({conn.error})" if conn.error else ""
            return ToolResult.error(f"{where}: the server is not connected: {conn.state}{reason}")
        if not conn.cfg.tool_enabled(tool) or (not spec.definition_hash and all(t.name != tool for t in conn.info.tools)):
            return ToolResult.error(f"{where}: the server does not offer this tool (now)")
        if spec.definition_hash:  # the current definition is looked up by name: offered now, or an error
            current = await self.current_definition(spec)
            if isinstance(current, str):
                return ToolResult.error(current)
            if current.definition_hash != spec.definition_hash:
                # An approval was given for the definition in ``spec``; never run a different one.
                return ToolResult.error(
                    f"{where}: the server changed this tool since it was approved; not called (the next request "
                    "sees the new definition)"
                )
        sandbox = sandbox_meta(conn.name, conn.cfg, self._config, conn.info.experimental)
        meta = call_meta(call, progress_token=call.call_id, extra=sandbox)
        try:
            result, _control = await conn.call_tool(
                tool, arguments, meta=meta, call_id=call.call_id, on_progress=on_progress
            )
        except TimeoutError:
            return ToolResult.error(f"{where} timed out after {conn.cfg.tool_timeout_sec:g} s")
        except McpUnavailable as exc:
            return ToolResult.error(f"{where}: {exc}")
        except MCPError as exc:
            return ToolResult.error(self._mcp_error(conn, where, exc))
        except asyncio.CancelledError:
            raise
        except BaseException as exc:  # noqa: BLE001 - transport errors become results, never exceptions
            if not isinstance(exc, Exception) and not isinstance(exc, BaseExceptionGroup):
                raise
            return ToolResult.error(f"{where} failed: {describe_error(exc)}")
        try:
            # The SDK has checked a successful result against the tool's outputSchema already (it
            # raises on a mismatch); only an error result, which it leaves alone, is checked here.
            return from_call_result(result, spec.output_schema if result.is_error else None)
        except Exception as exc:  # noqa: BLE001
            return ToolResult.error(f"{where} returned a result nbagent could not read: {exc}")

    def _mcp_error(self, conn: McpConnection, where: str, exc: MCPError) -> str:
        if exc.code == types.CONNECTION_CLOSED:
            tail = conn.stderr_tail()
            text = f"{where}: the server closed the connection (crashed?) during the call"
            return text + (f"; stderr tail:\n{tail}" if tail else "")
        if conn.needs_legacy(exc):
            self._spawn(self._downgrade(conn.name))
            return (
                f"{where} tried to ask the user in a way only the legacy protocol allows; nbagent is reconnecting "
                f"to {conn.name!r} with protocol = \"legacy\" (set it in the config to skip this) - retry the call"
            )
        return f"{where} failed: MCP error {exc.code}: {exc}"

    async def _downgrade(self, name: str) -> None:
        conn = self._conns.get(name)
        if conn is None or self._closed:
            return
        self._emit(WarningEvent(message=f"MCP server {name!r}: reconnecting with the legacy protocol"))
        self._conns.pop(name, None)
        await conn.aclose()
        await self._start_one(name, force_legacy=True)

    def _spawn(self, coro: Any) -> None:
        task = asyncio.get_running_loop().create_task(coro)
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    # ----- resources and prompts ---------------------------------------------------------

    def _ready(self, server: str) -> McpConnection:
        conn = self._conns.get(server)
        if conn is None:
            raise KeyError(f"no MCP server named {server!r}")
        return conn

    async def list_resources(self, server: str) -> list[dict[str, Any]]:
        return [r.model_dump(mode="json", exclude_none=True) for r in await self._ready(server).list_resources()]

    async def read_resource(self, server: str, uri: str) -> list[dict[str, Any]]:
        result = await self._ready(server).read_resource(uri)
        return [c.model_dump(mode="json", exclude_none=True) for c in result.contents]

    async def list_prompts(self, server: str) -> list[dict[str, Any]]:
        return [p.model_dump(mode="json", exclude_none=True) for p in await self._ready(server).list_prompts()]

    async def get_prompt(self, server: str, name: str, args: dict[str, str] | None = None) -> dict[str, Any]:
        result = await self._ready(server).get_prompt(name, args)
        return result.model_dump(mode="json", exclude_none=True)

    def _emit(self, event: EventMsg) -> None:
        if isinstance(event, McpStartupUpdate):  # every change of a server's state is announced so
            self.generation += 1
        if isinstance(event, McpStartupUpdate | McpLoginCompleted):  # new servers, new tokens
            self.refresh_secrets()
        deliver(self._on_event, event, log)  # a broken subscriber must not break startup or calls


def _build(
    builder: CatalogBuilder, servers: Mapping[str, ServerTools], defer: bool, secrets: Mapping[str, str]
) -> tuple[list[ToolSpec], dict[tuple[str, str], ToolSpec], list[str]]:
    """One build and its routing table, in the worker thread."""
    specs, warnings = builder.build(servers, defer=defer, secrets=secrets)
    return specs, {(spec.server or "", spec.raw_name): spec for spec in specs}, warnings


def _catalog_key(conn: McpConnection) -> Hashable:
    """What one ready server's catalogue entry is built from: a new connection, a new tool list
    or a new config gives a new key."""
    return id(conn), conn.generation, id(conn.cfg)


def check_server_name(name: str) -> None:
    if not SERVER_NAME.match(name):
        raise ValueError(f"MCP server name {name!r} must match [a-zA-Z0-9_-]+")
