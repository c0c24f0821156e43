"""``nbagent mcp list|get|add|remove|login|logout|import``: the verbs of ``nbagent.kit.servers``
at a terminal, one line per refusal.

Every edit goes to the file the server came from (``nbagent.config.edit``), keeping comments
and order; ``list`` reads the files and, with ``--check``, starts each server to show its state.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import sys
from pathlib import Path

from nbagent.config import ConfigError, load_config
from nbagent.kit.args import BAD_INPUT, fail, run_command
from nbagent.kit.servers import (
    Finished,
    UsageProblem,
    add,
    add_entry,
    check,
    get_text,
    import_servers,
    list_json,
    list_text,
    login,
    logout,
    parse,
    remove,
    server_view,
)


def invoked(argv: list[str], command: str = "mcp") -> tuple[str | None, list[str]] | None:
    """``(DIR, words)`` when ``argv`` is ``[-C DIR] COMMAND WORDS...``; otherwise None (also for
    ``inspect``, the other command with a parser of its own)."""
    cwd = None
    if argv[:1] == ["-C"] and len(argv) > 2:
        cwd, argv = argv[1], argv[2:]
    return (cwd, argv[1:]) if argv[:1] == [command] else None


async def _print_link(url: str) -> None:
    print(f"To log in, open this link in your browser (it is not opened for you):\n  {url}", flush=True)


def _run(args: argparse.Namespace, cwd: Path) -> int:
    if args.verb in ("list", "get"):
        config = load_config(cwd)
        if args.verb == "get":
            print(json.dumps(server_view(config, args.name)) if args.json else get_text(config, args.name))
            return 0
        warnings: list[str] = []
        statuses = asyncio.run(check(config, warnings)) if args.check else None
        if args.json:
            print(json.dumps(list_json(config, statuses), ensure_ascii=False))
        else:
            print(list_text(config, statuses))
        for warning in [*config.warnings, *warnings]:
            print(f"warning: {warning}", file=sys.stderr)
        return 0
    if args.verb == "add":
        added = add(cwd, *add_entry(args), user=args.user)
        print(added.text)
        if added.warning:  # last, where it is seen: the server just added will not start
            print(f"warning: {added.warning}", file=sys.stderr)
        return 0
    if args.verb == "remove":
        print(remove(cwd, args.name))
        return 0
    if args.verb == "import":
        report = import_servers(args.tool, cwd, dry_run=args.dry_run, files=args.files, user=args.user)
        print(report.text)
        return report.code
    config = load_config(cwd)
    if args.verb == "logout":
        print(logout(config, args.name))
        return 0
    try:
        print(asyncio.run(login(config, args.name, args.scopes, _print_link)))
    except (ConfigError, UsageProblem):
        raise
    except Exception as exc:  # noqa: BLE001 - the authorization server's refusal is one line
        return fail("nbagent mcp login", f"{args.name}: {exc or type(exc).__name__}", 1)
    return 0


def main(argv: list[str], cwd: str | None = None) -> int:
    """``nbagent [-C DIR] mcp VERB ...``: 0 done, 1 a server or file refused, 2 bad input."""
    from nbagent.textsafe import VisibleWriter

    try:
        args = parse(argv)
    except Finished as done:
        return done.status
    except UsageProblem as exc:  # its line names the verb already
        print(exc, file=sys.stderr, flush=True)
        return BAD_INPUT
    prog = f"nbagent mcp {args.verb}"
    out = sys.stdout if getattr(args, "json", False) else VisibleWriter(sys.stdout)
    # Names, values and errors come from other tools' files and from servers: controls are shown, not obeyed.
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(VisibleWriter(sys.stderr)):
        return run_command(prog, lambda: _run(args, Path(getattr(args, "cwd", None) or cwd or ".").resolve()), bad=(UsageProblem,))
