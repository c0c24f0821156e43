"""How the ``nbagent`` commands refuse bad input: one line on stderr naming the problem, exit 2.

argparse prints a usage block and then the error; a person has to find the one line that
matters. Here the line comes first and alone, and points at ``--help`` for the rest.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from typing import NoReturn

from nbagent.textsafe import folded

BAD_INPUT = 2


class BadInput(Exception):
    """Input the command cannot use (an address, a folder, a thread); the message says which."""


class Parser(argparse.ArgumentParser):
    """An ``ArgumentParser`` (and its subcommands' parsers) whose errors are one line."""

    def error(self, message: str) -> NoReturn:
        self.exit(BAD_INPUT, f"{self.prog}: {folded(message)} (see {self.prog} --help)\n")


def cwd_option(parser: argparse.ArgumentParser, *, default: object = argparse.SUPPRESS) -> None:
    """``-C DIR``, worded the same in every command (given after a command, it overrides the
    one before it: hence no default there)."""
    parser.add_argument("-C", dest="cwd", metavar="DIR", default=default, help="work in DIR (config, relative paths)")


def describe(exc: BaseException) -> str:
    """An ``OSError`` as ``PATH: reason``; anything else as its message."""
    if isinstance(exc, OSError) and exc.strerror:
        return f"{exc.filename}: {exc.strerror}" if exc.filename else exc.strerror
    if isinstance(exc, KeyError) and exc.args:
        return str(exc.args[0])
    return str(exc)


def fail(prog: str, exc: BaseException | str, code: int = BAD_INPUT) -> int:
    """Print the one line for ``exc``; returns ``code`` (bad input by default)."""
    text = exc if isinstance(exc, str) else describe(exc)
    print(f"{prog}: {folded(text)}", file=sys.stderr, flush=True)
    return code


def run_command(prog: str, body: Callable[[], int], *, bad: tuple[type[Exception], ...] = ()) -> int:
    """``body()``'s exit code, or the one its failure means, said in one line: bad input
    (``BadInput``, ``ConfigError`` and ``bad``) 2, a file or process that refused (``OSError``) 1,
    Ctrl-C 130, a stop signal 128 + its number. Every ``nbagent`` command ends through here, so
    they all fail alike."""
    from nbagent import signals
    from nbagent.config import ConfigError

    refused: tuple[type[Exception], ...] = (BadInput, ConfigError, *bad)
    try:
        return body()
    except refused as exc:
        return fail(prog, exc)
    except OSError as exc:
        return fail(prog, exc, 1)
    except KeyboardInterrupt:
        return 130
    except signals.Stopped as stop:
        return stop.exit_code


def positive(kind: type[float] | type[int]) -> Callable[[str], float | int]:
    """An argparse type: a positive number of ``kind`` (argparse names the option when it refuses one)."""

    def parse(text: str) -> float | int:
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a positive {kind.__name__}, got {text!r}") from None
        if not value > 0 or value == float("inf"):
            raise argparse.ArgumentTypeError(f"expected a positive {kind.__name__}, got {text!r}")
        return value

    return parse
