"""Which folders' own config nbagent reads.

A folder's ``nbagent.toml`` and ``.mcp.json`` name programs to start, where the API key is sent
and how approvals go; opening a notebook in a folder someone else wrote (a clone, a download, a
shared drive) must not do any of that. So they are read only in a folder the user trusts, which
only the user's own ``~/.nbagent/config.toml`` can say, as Codex spells it::

    [projects."/home/me/work"]
    trust_level = "trusted"

The nearest listed folder at or above the working directory decides, so a trusted folder
covers its subfolders and an ``untrusted`` entry below it takes one back. Where no one is there
to run ``nbagent trust`` (a container, CI), ``$NBAGENT_TRUSTED_FOLDERS`` lists trusted folders
(``os.pathsep`` between them); the user file's entries come first.
"""

from __future__ import annotations

import os
import shlex
from collections.abc import Mapping
from pathlib import Path
from typing import Literal, NamedTuple

from pydantic import BaseModel, ConfigDict

TrustLevel = Literal["trusted", "untrusted"]


class ProjectTrust(BaseModel):
    """One ``[projects."/abs/path"]`` table."""

    model_config = ConfigDict(extra="forbid", strict=True)

    trust_level: TrustLevel
    """``trusted``: the folder's ``nbagent.toml`` and ``.mcp.json`` are read; ``untrusted``: never."""


class Verdict(NamedTuple):
    level: TrustLevel
    folder: Path
    """The listed folder that decided (the working directory or one above it)."""


def folder_key(path: str | Path) -> str:
    """How a folder is written under ``[projects]``: absolute, links resolved."""
    return str(Path(path).expanduser().resolve())


def check_key(key: str) -> str:
    """A ``[projects]`` key must be an absolute path: a relative one would mean another folder
    wherever nbagent runs."""
    if not Path(key).expanduser().is_absolute():
        raise ValueError(f"{key!r} must be an absolute path")
    return key


ENV = "NBAGENT_TRUSTED_FOLDERS"


def listed(user: Mapping[str, ProjectTrust], environ: Mapping[str, str]) -> dict[str, ProjectTrust]:
    """The user file's ``[projects]`` over the folders ``$NBAGENT_TRUSTED_FOLDERS`` trusts."""
    from_env: dict[str, ProjectTrust] = {}
    for folder in environ.get(ENV, "").split(os.pathsep):
        if folder:
            try:
                check_key(folder)
            except ValueError as exc:
                raise ValueError(f"${ENV}: {exc}") from None
            from_env[folder] = ProjectTrust(trust_level="trusted")
    return {**from_env, **user}


def trust_of(folder: str | Path, projects: Mapping[str, ProjectTrust]) -> Verdict | None:
    """The nearest entry at or above ``folder``; ``None`` when none is listed (not trusted)."""
    if not projects:
        return None
    listed = {Path(folder_key(key)): entry.trust_level for key, entry in projects.items()}
    here = Path(folder_key(folder))
    for candidate in (here, *here.parents):
        level = listed.get(candidate)
        if level is not None:
            return Verdict(level, candidate)
    return None


def refusal(what: str, folder: Path, projects: Mapping[str, ProjectTrust], user_file: Path) -> str | None:
    """Why ``what`` (a file of ``folder``'s, or part of one) is not read; ``None`` in a trusted folder."""
    verdict = trust_of(folder, projects)
    if verdict is not None and verdict.level == "trusted":
        return None
    return not_read(what, Path(folder_key(folder)), verdict, user_file)


def not_read(file: str | Path, folder: Path, verdict: Verdict | None, user_file: Path) -> str:
    """The warning for a project file left unread, saying why and the one command that trusts it."""
    return f"{file}: not read: {why_not_read(folder, verdict, user_file)}"


def why_not_read(folder: Path, verdict: Verdict | None, user_file: Path) -> str:
    """Why ``folder``'s own config is not read, and the one command that trusts it."""
    if verdict is not None and verdict.level == "untrusted":
        why = f"{user_file} marks {verdict.folder} untrusted"
    else:
        why = (f"{folder} is not a trusted folder (a folder's config can start programs, send the API key "
               f"elsewhere and relax approvals)")
    return f"{why}. If you trust who wrote it: nbagent trust {shlex.quote(str(folder))} (in a notebook there: %agent trust)"


class Unread(NamedTuple):
    """A folder's own config files left unread because the folder is not trusted."""

    files: list[Path]
    why: str
    """``why_not_read``: the reason and the command that trusts the folder."""

    def no_tools(self, nothing: str) -> str:
        """``nothing`` ("no tools") said with why, where a bare one would leave the person guessing."""
        return f"{nothing}: this folder's config is not read ({', '.join(map(str, self.files))}): {self.why}"
