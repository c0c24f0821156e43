"""A real MCP server with a catalogue bigger than one model request may carry, for the many-tools
walkthrough: a code-hosting platform's API as one tool per resource and action (240 tools).

Each tool sends the kind of schema real API servers send: the repository as a ``$ref`` into
``$defs``, enums, a nested paging object, and for ``create_pull_request`` the branches to merge.
Reads are annotated read-only and deletes destructive. Every call is recorded as the identity
server records them (``--record``), so the walkthrough can show that only the tool the model
found ran.

Run: ``python -m nbagent.examples.platform_server [--record FILE]``.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

import mcp_types as types

from nbagent.examples.identity_server import recording_server, serve_stdio

RESOURCES = (
    "repository", "branch", "commit", "tag", "pull request", "review", "issue", "comment",
    "label", "milestone", "release", "deployment", "environment", "secret", "variable", "runner",
    "workflow", "workflow run", "artifact", "package", "team", "member", "webhook", "project",
    "discussion", "gist", "alert", "check run", "codespace", "invitation",
)
ACTIONS = {
    "get": "Get one {r} by its id.",
    "list": "List the {r} records of a repository, newest first, a page at a time.",
    "search": "Search the {r} records of a repository by words in their text.",
    "create": "Create a {r} in a repository.",
    "update": "Change the fields of an existing {r}.",
    "delete": "Delete a {r} for good.",
    "archive": "Archive a {r}: kept, but read-only.",
    "watch": "Notify me about every change to a {r}.",
}
READ_ONLY = {"get", "list", "search"}

REPO: dict[str, Any] = {
    "type": "object",
    "properties": {"owner": {"type": "string"}, "name": {"type": "string"}},
    "required": ["owner", "name"],
    "additionalProperties": False,
}


def _schema(action: str, resource: str) -> dict[str, Any]:
    properties: dict[str, Any] = {"repo": {"$ref": "#/$defs/repo", "description": "owner/name"}}
    required = ["repo"]
    if action in ("get", "update", "delete", "archive", "watch"):
        properties["id"] = {"type": "string"}
        required.append("id")
    if action in ("list", "search"):
        properties["state"] = {"enum": ["open", "closed", "all"], "default": "open"}
        properties["page"] = {
            "type": "object",
            "properties": {"size": {"type": "integer", "minimum": 1, "maximum": 100}, "cursor": {"type": "string"}},
        }
    if action == "search":
        properties["query"] = {"type": "string", "minLength": 1}
        required.append("query")
    if action in ("create", "update"):
        properties["title"] = {"type": "string", "maxLength": 256}
        properties["body"] = {"type": "string"}
    if action == "create" and resource == "pull request":
        properties["head"] = {"type": "string", "description": "The branch with the changes."}
        properties["base"] = {"type": "string", "description": "The branch to merge them into."}
        properties["draft"] = {"type": "boolean", "default": False}
        required += ["head", "base", "title"]
    return {"type": "object", "$defs": {"repo": REPO}, "properties": properties, "required": required}


def platform_tools() -> list[types.Tool]:
    """Every resource's eight actions, resource by resource (the order the server lists them)."""
    return [
        types.Tool(
            name=f"{action}_{resource.replace(' ', '_')}",
            description=text.format(r=resource),
            input_schema=_schema(action, resource),
            annotations=types.ToolAnnotations(read_only_hint=action in READ_ONLY, destructive_hint=action == "delete"),
        )
        for resource in RESOURCES
        for action, text in ACTIONS.items()
    ]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m nbagent.examples.platform_server", description=__doc__)
    parser.add_argument("--record", help="JSONL file each call is appended to")
    args = parser.parse_args(argv)
    serve_stdio(recording_server("platform", platform_tools(), Path(args.record) if args.record else None))


if __name__ == "__main__":
    main()
