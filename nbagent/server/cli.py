"""``nbagent mcp-server``: serve nbagent over stdio (default) or streamable HTTP (``--http``)."""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
from typing import Any

from nbagent import signals
from nbagent.config import ConfigError
from nbagent.kit.args import BadInput, Parser, fail, positive
from nbagent.protocol.ops import POLICIES
from nbagent.sandbox import SANDBOX_MODES
from nbagent.secrets import add_process_secret
from nbagent.server.threads import Defaults

TOKEN_ENV = "NBAGENT_SERVER_TOKEN"


def _parser() -> argparse.ArgumentParser:
    p = Parser(prog="nbagent mcp-server", description=(
        "Serve nbagent as an MCP server with tools agent and agent-reply. stdio by default; "
        "--http serves streamable HTTP on 127.0.0.1 behind a bearer token."))
    p.add_argument("--http", metavar="HOST:PORT", type=_hostport,
                   help="serve streamable HTTP at HOST:PORT (PORT 0 picks one; an IPv6 HOST in [brackets])")
    p.add_argument("--token", help=f"bearer token, at least 16 characters (default: ${TOKEN_ENV}, "
                                   "else a new one printed to stderr)")
    p.add_argument("--allow-remote", action="store_true",
                   help="allow a non-loopback HOST (you provide TLS and network protection)")
    p.add_argument("--allowed-host", action="append", default=[], metavar="NAME",
                   help="another Host/Origin name to accept, at the port served or NAME:PORT (repeatable)")
    p.add_argument("--model", help="default model for new threads (e.g. gpt-5.1 or replay:PATH)")
    p.add_argument("--policy", choices=POLICIES,
                   help="default approval policy for new threads")
    p.add_argument("--sandbox", choices=SANDBOX_MODES, help="the MCP servers' sandbox (default: sandbox_mode)")
    p.add_argument("--cwd", help="default working directory for new threads")
    p.add_argument("-c", "--config", action="append", default=[], metavar="KEY=JSON",
                   help="config override for every thread, e.g. -c max_tool_rounds=5 (repeatable)")
    p.add_argument("--park-timeout", type=positive(float), default=600.0, metavar="SECONDS",
                   help="seconds a stateless (2026-07-28) run waits for the client's next round (default 600)")
    p.add_argument("--ask-timeout", type=positive(float), default=600.0, metavar="SECONDS",
                   help="an approval or question waits this long for the MCP client's answer, then counts as "
                        "unanswered and the turn goes on (default 600)")
    p.add_argument("--session-idle-timeout", type=positive(float), default=300.0, metavar="SECONDS",
                   help="close a thread's session (and its MCP servers) after this long without a turn; "
                        "the thread stays resumable (default 300)")
    p.add_argument("--max-sessions", type=positive(int), default=8, metavar="N",
                   help="live sessions at most; the oldest idle one is closed to make room (default 8)")
    p.add_argument("--allow-config-override", action="store_true",
                   help="let callers of the agent tool override any config key, cwd, home and replay: "
                        "files; a caller can then run any command as you (off by default)")
    p.add_argument("--log-level", default="warning", type=str.lower, choices=["debug", "info", "warning", "error"],
                   help="log level of the server's own stderr logging")
    return p


def _overrides(items: list[str]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for item in items:
        key, sep, raw = item.partition("=")
        if not sep:
            raise SystemExit(f"nbagent mcp-server: -c expects KEY=VALUE, got {item!r}")
        try:
            out[key.strip()] = json.loads(raw)
        except json.JSONDecodeError:
            out[key.strip()] = raw
    return out


def _hostport(value: str) -> tuple[str, int]:
    """``HOST:PORT``, ``:PORT`` or ``PORT`` (host 127.0.0.1); anything else is a one-line error."""
    host, _, port = value.rpartition(":")
    bracketed = host.startswith("[") and host.endswith("]")
    if not (port.isascii() and port.isdigit() and int(port) <= 65535) or (":" in host and not bracketed):
        raise argparse.ArgumentTypeError(f"expected HOST:PORT with PORT 0-65535, got {value!r}")
    return (host[1:-1] if bracketed else host) or "127.0.0.1", int(port)


async def serve_stdio(defaults: Defaults) -> None:
    from mcp.server.stdio import stdio_server

    from nbagent.server.app import build_server

    server, pool = build_server(defaults)
    try:
        async with stdio_server() as (read, write):
            await server.run(read, write, server.create_initialization_options())
    except* BrokenPipeError:  # the client closed the pipes: the end of the conversation, not an error
        _drop_stdout()
    finally:
        await pool.aclose()


def _drop_stdout() -> None:
    """Send what is left for a closed stdout nowhere, so that no later flush (the interpreter's at
    exit) fails again."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)


async def serve_http(defaults: Defaults, host: str, port: int, token: str, *, printed_token: bool,
                     extra_hosts: list[str]) -> None:
    from nbagent.kit.http import http_app, start_http
    from nbagent.server.app import build_server

    server, pool = build_server(defaults)
    app = http_app(server, token, bind_host=host, extra_hosts=extra_hosts)
    try:
        handle = await start_http(app, host=host, port=port, token=token, signals=True)
    except OSError as exc:
        await pool.aclose()
        raise BadInput(exc.strerror or str(exc)) from None
    print(f"nbagent mcp-server listening on {handle.url}", file=sys.stderr, flush=True)
    if printed_token:
        print(f"bearer token: {token}", file=sys.stderr, flush=True)
    try:
        await handle.wait()
    finally:  # a stop signal cancels the wait: uvicorn still runs its lifespan shutdown, quietly
        await handle.stop()
        await pool.aclose()


def main_mcp_server(argv: list[str]) -> int:
    args = _parser().parse_args(argv)
    logging.basicConfig(level=args.log_level.upper(), stream=sys.stderr)
    defaults = Defaults(model=args.model, policy=args.policy, cwd=args.cwd,
                        config=_overrides(args.config) | ({"sandbox_mode": args.sandbox} if args.sandbox else {}),
                        park_timeout=args.park_timeout, ask_timeout=args.ask_timeout,
                        idle_timeout=args.session_idle_timeout, max_sessions=args.max_sessions,
                        allow_config_override=args.allow_config_override)
    try:  # every call would fail on a bad setting: refuse it now, naming it, rather than serve
        if not defaults.server_cwd.is_dir():
            raise BadInput(f"--cwd {args.cwd}: not a folder")
        config = defaults.load_config(defaults.server_cwd)
        if args.allow_config_override:
            config.requirements.check_switch("allow_config_override", "--allow-config-override")
    except (BadInput, ConfigError) as exc:
        return fail("nbagent mcp-server", exc)
    if not args.http:
        try:
            signals.run(serve_stdio(defaults))
        except signals.Stopped as stop:
            return stop.exit_code
        return 0
    from nbagent.kit.http import check_bind, check_token, new_token, split_host

    host, port = args.http
    given, source = (args.token, "--token") if args.token else (os.environ.get(TOKEN_ENV), f"${TOKEN_ENV}")
    try:
        check_bind(host, args.allow_remote)
        for name in args.allowed_host:
            split_host(name)
        token = check_token(given, source) if given else new_token()
    except ValueError as exc:
        return fail("nbagent mcp-server", exc)
    add_process_secret(token)  # a caller may paste it into a prompt: rollouts redact it
    try:
        signals.run(serve_http(defaults, host, port, token, printed_token=not given, extra_hosts=args.allowed_host))
    except KeyboardInterrupt:
        pass
    except signals.Stopped as stop:
        return stop.exit_code
    except (BadInput, ConfigError, OSError) as exc:
        return fail("nbagent mcp-server", exc)
    return 0
