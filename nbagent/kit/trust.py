"""Whether a folder's own config is read (``nbagent.config.trust``): what ``nbagent trust`` and
``%agent trust`` both record and say."""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from pydantic import TypeAdapter, ValidationError

from nbagent.config import MCP_JSON, PROJECT_FILE, ConfigError
from nbagent.config.errors import problems
from nbagent.config.files import present, read_toml
from nbagent.config.requirements import RequirementError, load_requirements
from nbagent.config.trust import ENV, ProjectTrust, TrustLevel, listed, trust_of
from nbagent.kit.args import BadInput

_Projects = TypeAdapter(dict[str, ProjectTrust])


FLAGS = ("--untrusted", "--forget", "--list")


def words(folder: str | None, flag: str | None) -> argparse.Namespace:
    """What ``nbagent trust``'s parser gives (``nbagent.cli_trust``), for ``%agent trust``'s words."""
    return argparse.Namespace(folder=folder, **{f.lstrip("-"): f == flag for f in FLAGS})


def run(args: argparse.Namespace, cwd: str | None) -> str:
    """What was recorded, for the terminal."""
    if args.list:
        if args.folder:
            raise BadInput("--list takes no folder")
        own = _listed()
        rows = [f"{e.trust_level:9}  {folder}" for folder, e in sorted(own.items())]
        rows += [f"trusted    {folder}  (${ENV})" for folder in sorted(listed({}, os.environ)) if folder not in own]
        return "\n".join(rows) or "no folders listed"
    from nbagent.config.edit import record_trust

    folder = Path(cwd or ".", args.folder or ".")
    if not folder.is_dir():
        raise BadInput(f"{folder}: not a folder")
    level: TrustLevel | None = None if args.forget else "untrusted" if args.untrusted else "trusted"
    if level == "trusted":
        try:
            load_requirements().check_switch("allow_trusting_folders", "trusting a folder")
        except RequirementError as exc:
            raise BadInput(str(exc)) from None
    path, key = record_trust(folder, level)
    done = {"trusted": "Trusted", "untrusted": "Marked untrusted", None: "Removed"}[level]
    verdict = trust_of(key, trusted_projects())
    if verdict is None or verdict.level == "untrusted":
        now = f"its {PROJECT_FILE} and {MCP_JSON} are not read"
    else:
        present = [str(Path(key, name)) for name in (MCP_JSON, PROJECT_FILE) if Path(key, name).is_file()]
        covered = "" if str(verdict.folder) == key else f" (inside trusted {verdict.folder})"
        now = f"its config is read{covered}" + (f": {', '.join(present)}" if present else "")
    return f"{done} {key} {'from' if level is None else 'in'} {path}: {now}"


def trusted_projects() -> dict[str, ProjectTrust]:
    """Every folder listed: the user file's entries over those ``$NBAGENT_TRUSTED_FOLDERS`` trusts."""
    own = _listed()
    try:
        return listed(own, os.environ)
    except ValueError as exc:
        raise ConfigError(str(exc)) from None


def _listed() -> dict[str, ProjectTrust]:
    """The user file's ``[projects]``, read alone: a folder's broken config must not stop this."""
    from nbagent.config.edit import user_file

    path = user_file()
    try:
        return _Projects.validate_python(read_toml(path).get("projects", {})) if present(path) else {}
    except ValidationError as exc:
        raise ConfigError(f"{path}: {problems(exc, lambda key: f'projects.{key}')}") from None
