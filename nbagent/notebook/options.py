"""Parsing ``%%agent`` options: bad arguments become a usage line, never a traceback."""

from __future__ import annotations

import argparse
import re
import shlex
from dataclasses import dataclass
from typing import Any, NoReturn

from nbagent.protocol.ops import POLICIES, Policy
from nbagent.sandbox.policy import SANDBOX_MODES, SandboxMode

CELL_USAGE = (
    "usage: %%agent [-t THREAD] [-m MODEL] [--policy " + "|".join(POLICIES) + "] [--sandbox "
    + "|".join(SANDBOX_MODES) + "]\n"
    "               [--new] [--wait] [-i]\n"
    "       <the goal, in words>\n"
    "  --sandbox: the sandbox of this turn's shell commands, and what the model is told of it;\n"
    "             MCP servers already started keep theirs (sandbox_mode in the config, then %agent mcp restart)"
)
LINE_USAGE = (
    "usage: %agent [threads | resume ID | new [NAME] | history | mcp [add NAME [--env K=V]... -- CMD ARGS... | "
    "add NAME --url URL [--bearer-token-env-var VAR] | restart NAME | remove NAME] | resources [SERVER [URI]] | "
    "prompts [SERVER [NAME [KEY=VALUE]...]] | stop | approve [CALL_ID] | "
    "deny CALL_ID [REASON] | inspect tools|request [--all]|turn [ID]|wire SERVER [-n N] [--json] | "
    "serve [--port N] | serve --stop | frontend [widgets|text|headless]]"
)
_VAR = re.compile(r"\{\{|\}\}|\{([A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*)\}")


class UsageError(ValueError):
    """Shown to the user as one line plus the usage text."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise UsageError(message)

    def exit(self, status: int = 0, message: str | None = None) -> NoReturn:
        raise UsageError(message or "")


def _cell_parser() -> _Parser:
    p = _Parser(prog="%%agent", add_help=False)
    p.add_argument("-t", "--thread")
    p.add_argument("-m", "--model")
    p.add_argument("--policy", choices=POLICIES)
    p.add_argument("--sandbox", choices=SANDBOX_MODES)
    p.add_argument("--new", action="store_true")
    p.add_argument("--wait", action="store_true")
    p.add_argument("-i", "--interpolate", action="store_true")
    return p


@dataclass
class CellOptions:
    thread: str | None = None
    model: str | None = None
    policy: Policy | None = None
    sandbox: SandboxMode | None = None
    new: bool = False
    wait: bool = False
    interpolate: bool = False


def parse_cell_line(line: str) -> CellOptions:
    try:
        words = shlex.split(line)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    ns = _cell_parser().parse_args(words)
    return CellOptions(ns.thread, ns.model, ns.policy, ns.sandbox, ns.new, ns.wait, ns.interpolate)


def interpolate(text: str, namespace: dict[str, Any]) -> str:
    """Replace ``{name}`` / ``{name.attr}`` with values from the user namespace; ``{{``/``}}`` are
    literal braces and anything else stays as written."""

    def value(match: re.Match[str]) -> str:
        if match.group(1) is None:
            return match.group(0)[0]
        head, *rest = match.group(1).split(".")
        if head not in namespace:
            raise UsageError(f"-i: {{{match.group(1)}}} names no variable in the notebook")
        obj = namespace[head]
        for attr in rest:
            try:
                obj = getattr(obj, attr)
            except AttributeError:
                raise UsageError(f"-i: {{{match.group(1)}}}: no attribute {attr!r}") from None
        return str(obj)

    return _VAR.sub(value, text)
