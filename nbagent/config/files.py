"""Reading a config file into plain data: TOML or JSON, with errors that name the file, and the
line and key when a value nests past what the parser's stack can hold."""

from __future__ import annotations

import json
import os
import re
import stat
import tomllib
from collections.abc import Callable
from pathlib import Path
from typing import Any

from nbagent.config.errors import ConfigError

MAX_DEPTH = 100
_KEY_BEFORE = {
    "toml": re.compile(r"""(?:^|[{,])\s*([A-Za-z0-9_.\-"']+)\s*=""", re.MULTILINE),
    "json": re.compile(r'"((?:[^"\\]|\\.)*)"\s*:'),
}
_KEY_DEPTH = {"toml": 1, "json": 4}
"""The nesting level of the value of the key to name: a TOML line's key, a JSON server's key."""


def present(path: Path) -> bool:
    """Whether there is a file at ``path`` to read; anything else there (a folder, a link loop or
    to nothing, a FIFO that would block) is an error naming it, not a file that is absent: a user
    file nbagent silently skipped would drop the user's policy and trusted folders unsaid."""
    if not os.path.lexists(path):
        return False
    try:
        mode = path.stat().st_mode
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read: {exc.strerror or exc}") from None
    if not stat.S_ISREG(mode):
        raise ConfigError(f"{path}: cannot read: not a regular file")
    return True


def outside(path: Path, folder: Path, which: str = "the trusted folder") -> str | None:
    """Why ``path`` is not taken as ``folder``'s own file (to read or to edit): a link that
    leads out of it."""
    real = path.resolve()
    if real.is_relative_to(folder.resolve()):
        return None
    return f"it is a link to {real}, outside {which} {folder}"


def read_text(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path}: cannot read: {getattr(exc, 'strerror', None) or exc}") from None


def _too_deep(path: Path, text: str, kind: str) -> ConfigError:
    """The parser ran out of stack: name the file, the line and the key whose value nests."""
    depth, quote, at = 0, "", len(text)
    opened = [0] * (_KEY_DEPTH[kind] + 1)  # where the value at each shallow level began
    for at, char in enumerate(text):  # brackets outside strings (and TOML comments)
        if quote:
            if char == quote and text[at - 1] != "\\":
                quote = ""
        elif char in "\"'" and (kind == "toml" or char == '"'):
            quote = char
        elif char == "#" and kind == "toml":
            quote = "\n"
        elif char in "[{":
            depth += 1
            if depth < len(opened):
                opened[depth] = at
            if depth > MAX_DEPTH:
                break
        elif char in "]}":
            depth -= 1
    keys = _KEY_BEFORE[kind].findall(text, 0, opened[min(depth, len(opened) - 1)] or at)
    key = keys[-1].strip("\"'") if keys else "?"
    line = text.count("\n", 0, at) + 1
    return ConfigError(f"{path}: line {line}: key '{key}': nested more than {MAX_DEPTH} levels deep")


def _parse(path: Path, kind: str, loads: Callable[[str], Any], invalid: type[ValueError]) -> Any:
    text = read_text(path)
    try:
        return loads(text)
    except invalid as exc:
        raise ConfigError(f"{path}: invalid {kind.upper()}: {exc}") from None
    except RecursionError:
        raise _too_deep(path, text, kind) from None


def read_toml(path: Path) -> dict[str, Any]:
    return _parse(path, "toml", tomllib.loads, tomllib.TOMLDecodeError)


def read_json(path: Path) -> Any:
    return _parse(path, "json", json.loads, json.JSONDecodeError)
