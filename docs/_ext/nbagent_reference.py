"""Reference pages generated from the code, so they cannot drift from it.

``{nbagent-config}`` renders every config table from the pydantic models in
:mod:`nbagent.config` (key, type, default, constraints, and the field's docstring as its
description); ``{nbagent-cli}`` renders each command's ``--help`` from the argparse parsers the
``nbagent`` command itself builds.
"""

from __future__ import annotations

import argparse
import ast
import importlib
import inspect
import json
import os
import re
import textwrap
import types
import typing
from collections.abc import Iterator

from docutils import nodes
from docutils.statemachine import StringList
from pydantic import BaseModel
from pydantic.fields import FieldInfo
from sphinx.application import Sphinx
from sphinx.util.docutils import SphinxDirective

# -- configuration --------------------------------------------------------------------------------


def tables() -> list[tuple[str, type[BaseModel], str]]:
    """Each TOML table nbagent reads: its header, its model, one line on where it sits."""
    from nbagent.config import ApprovedDefinition, Config, McpServerConfig, ModelProviderConfig, ToolConfig
    from nbagent.config.oauth import OAuthSettings
    from nbagent.config.otel import OtelConfig, OtlpHttp
    from nbagent.config.trust import ProjectTrust
    from nbagent.sandbox import SandboxSettings, SandboxWorkspaceWrite

    return [
        ("Top level", Config, "Keys at the top of `nbagent.toml` or `~/.nbagent/config.toml`."),
        ("[mcp_servers.NAME]", McpServerConfig, "One MCP server; `NAME` is letters, digits, `_` and `-`."),
        ("[mcp_servers.NAME.tools.TOOL]", ToolConfig, "One tool of that server, by its raw MCP name."),
        ("[mcp_servers.NAME.tools.TOOL.approved_definition]", ApprovedDefinition,
         "Written by an *Always* approval; not meant to be edited by hand."),
        ("[mcp_servers.NAME.oauth]", OAuthSettings, "How nbagent presents itself to the server's authorization server."),
        ("[model_providers.NAME]", ModelProviderConfig, "An OpenAI-compatible endpoint, chosen with `model_provider = \"NAME\"`."),
        ("[sandbox_workspace_write]", SandboxWorkspaceWrite,
         "What `sandbox_mode = \"workspace-write\"` adds; also under `[mcp_servers.NAME]`, key by key over this one."),
        ("[sandbox]", SandboxSettings, "nbagent's own sandbox keys (docs/security.md, \"Sandbox\")."),
        ('[projects."FOLDER"]', ProjectTrust,
         "A folder (absolute path) whose own config is read or never read; only in `~/.nbagent/config.toml`."),
        ("[otel]", OtelConfig, "The audit trail as OpenTelemetry log records (Codex's keys; docs/configuration.md)."),
        ("[otel.exporter.otlp-http]", OtlpHttp, "The OTLP/HTTP collector the records are sent to."),
    ]


def header_of(model: type[BaseModel]) -> str:
    return next(header for header, each, _ in tables() if each is model)


def attribute_docstrings(model: type[BaseModel]) -> dict[str, str]:
    """The string literal under each annotated field in the class body (the codebase's way of
    documenting a field), by field name."""
    docs: dict[str, str] = {}
    for cls in reversed(model.__mro__):
        if not (isinstance(cls, type) and issubclass(cls, BaseModel)) or cls is BaseModel:
            continue
        body = ast.parse(textwrap.dedent(inspect.getsource(cls))).body[0].body  # type: ignore[attr-defined]
        for node, after in zip(body, body[1:]):
            if (isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name)
                    and isinstance(after, ast.Expr) and isinstance(after.value, ast.Constant)
                    and isinstance(after.value.value, str)):
                docs[node.target.id] = inspect.cleandoc(after.value.value)
    return docs


def type_text(annotation: object) -> str:
    origin = typing.get_origin(annotation)
    args = typing.get_args(annotation)
    if annotation is type(None):
        return "unset"
    if origin is typing.Literal:
        return " | ".join(f"`{json.dumps(a)}`" for a in args)
    if origin in (typing.Union, types.UnionType):
        return " | ".join(type_text(a) for a in args)
    if origin is list:
        return f"list of {type_text(args[0])}"
    if origin is dict:
        value = args[1]
        if isinstance(value, type) and issubclass(value, BaseModel):
            return f"tables `{header_of(value)}`"
        return f"table of {type_text(value)}"
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return f"table `{header_of(annotation)}`"
    if annotation in (str, int, float, bool):
        return {str: "string", int: "integer", float: "number", bool: "boolean"}[annotation]  # type: ignore[index]
    return str(annotation)


def default_text(field: FieldInfo) -> str:
    if field.is_required():
        return "required"
    value = field.get_default(call_default_factory=True)
    if value is None:
        return "unset"
    if value == {}:
        return "empty"
    if isinstance(value, BaseModel):
        return "its keys' defaults"
    return f"`{json.dumps(value)}`"


def constraints_text(field: FieldInfo) -> str:
    words = {"gt": ">", "ge": "≥", "lt": "<", "le": "≤"}
    found = [f"{words[name]} {getattr(m, name)}" for m in field.metadata for name in words if hasattr(m, name)]
    return f" ({', '.join(found)})" if found else ""


def description_text(doc: str) -> str:
    """A docstring as one line of Markdown: roles become code, ``x`` stays code."""
    doc = re.sub(r":\w+:`~?([^`]+)`", r"`\1`", doc)
    return " ".join(doc.split())


def rows(model: type[BaseModel]) -> Iterator[tuple[str, str, str, str]]:
    """``(key, type, default, description)`` for each key of the table ``model`` reads."""
    docs = attribute_docstrings(model)
    for name, field in model.model_fields.items():
        if field.exclude:  # internal or environment-only (api_key): not a key of the file
            continue
        yield name, type_text(field.annotation) + constraints_text(field), default_text(field), description_text(docs.get(name, ""))


def config_markdown() -> Iterator[str]:
    """Each table as a heading and a definition list (a table's description column would be too
    narrow to read on a page)."""
    for header, model, where in tables():
        yield f"## `{header}`" if header.startswith("[") else f"## {header}"
        yield ""
        yield where
        yield ""
        for name, type_, default, description in rows(model):
            yield f"`{name}`"
            given = "required" if default == "required" else f"default {default}"
            yield f": *{type_}*, {given}. {description}".rstrip()
            yield ""


def note_sources(directive: SphinxDirective, *modules: str) -> None:
    """Rebuild the page when these modules (or this extension) change."""
    for module in modules:
        directive.env.note_dependency(inspect.getsourcefile(importlib.import_module(module)))
    directive.env.note_dependency(__file__)


class ConfigReference(SphinxDirective):
    """``{nbagent-config}``: the config tables, generated."""

    def run(self) -> list[nodes.Node]:
        note_sources(self, "nbagent.config", "nbagent.config.oauth")
        return self.parse_markdown(list(config_markdown()))

    def parse_markdown(self, lines: list[str]) -> list[nodes.Node]:
        container = nodes.section()
        container.document = self.state.document
        self.state.nested_parse(StringList(lines, source="nbagent.config"), self.content_offset, container,
                                match_titles=True)
        return list(container.children)


# -- command line ---------------------------------------------------------------------------------


def commands() -> Iterator[tuple[str, argparse.ArgumentParser]]:
    """``(command, parser)`` for ``nbagent`` and each subcommand, ``nbagent mcp`` and its verbs
    and ``nbagent mcp-server`` taken from the parsers that really parse them."""
    from nbagent import cli
    from nbagent.kit import servers
    from nbagent.server import cli as server_cli

    top, _ = cli._parser()
    real = {"mcp": servers.parser(), "mcp-server": server_cli._parser()}
    yield "nbagent", top
    for name, parser in subparsers(top):
        parser = real.get(name, parser)
        yield f"nbagent {name}", parser
        for verb, sub in subparsers(parser):
            yield f"nbagent {name} {verb}", sub


def subparsers(parser: argparse.ArgumentParser) -> list[tuple[str, argparse.ArgumentParser]]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return list(action.choices.items())
    return []


def help_text(parser: argparse.ArgumentParser) -> str:
    """``--help`` as a terminal 100 columns wide prints it (argparse reads ``$COLUMNS``)."""
    saved = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = "100"
    try:
        return parser.format_help()
    finally:
        if saved is None:
            del os.environ["COLUMNS"]
        else:
            os.environ["COLUMNS"] = saved


class CliReference(SphinxDirective):
    """``{nbagent-cli}``: every command's ``--help``, generated."""

    def run(self) -> list[nodes.Node]:
        note_sources(self, "nbagent.cli", "nbagent.kit.servers", "nbagent.server.cli")
        lines: list[str] = []
        for command, parser in commands():
            lines += [f"## `{command}`", "", "```text", *help_text(parser).rstrip().splitlines(), "```", ""]
        return ConfigReference.parse_markdown(self, lines)  # type: ignore[arg-type]


def setup(app: Sphinx) -> dict[str, object]:
    app.add_directive("nbagent-config", ConfigReference)
    app.add_directive("nbagent-cli", CliReference)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
