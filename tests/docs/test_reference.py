"""The generated reference pages say what the code does: every config key of every table with its
type, default and a description, and every command's real ``--help``."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "docs" / "_ext"))

import nbagent_reference as ref  # noqa: E402

TABLES = {header: model for header, model, _ in ref.tables()}


def _row(header: str, key: str) -> tuple[str, str, str]:
    return next(row[1:] for row in ref.rows(TABLES[header]) if row[0] == key)


@pytest.mark.parametrize("header", TABLES)
def test_every_key_has_its_entry_with_a_description(header: str):
    model = TABLES[header]
    listed = {name: description for name, _, _, description in ref.rows(model)}
    for name, field in model.model_fields.items():
        if field.exclude:
            assert name not in listed, f"{name} is not a key of the file and must not be listed"
        else:
            assert listed[name], f"{header} {name}: no description (give the field a docstring)"
    text = "\n".join(ref.config_markdown())
    assert all(f"`{name}`\n: *" in text for name in listed)


def test_types_and_defaults_come_from_the_models():
    assert _row("Top level", "tool_output_max_bytes") == (
        "integer (≥ 256)", "`16384`", "Cap on what the model sees of one tool result.")
    assert _row("Top level", "mcp_servers")[:2] == ("tables `[mcp_servers.NAME]`", "empty")
    assert _row("[mcp_servers.NAME]", "default_tools_approval_mode")[:2] == (
        '`"auto"` | `"prompt"` | `"writes"` | `"approve"`', '`"auto"`')
    assert _row("[mcp_servers.NAME]", "oauth")[:2] == ("table `[mcp_servers.NAME.oauth]` | unset", "unset")
    assert _row("[mcp_servers.NAME.tools.TOOL.approved_definition]", "input_schema")[1] == "required"
    assert "api_key" not in {row[0] for row in ref.rows(TABLES["Top level"])}


def test_cli_reference_uses_the_parsers_that_parse():
    found = dict(ref.commands())
    assert {"nbagent run", "nbagent resume", "nbagent threads", "nbagent demo", "nbagent mcp add",
            "nbagent mcp login", "nbagent mcp-server"} <= found.keys()
    # `nbagent mcp` and `mcp-server` are placeholders in the top parser; their real parsers are shown.
    assert "--allow-remote" in ref.help_text(found["nbagent mcp-server"])
    assert "--bearer-token-env-var" in ref.help_text(found["nbagent mcp add"])
    assert ref.help_text(found["nbagent run"]).startswith("usage: nbagent run ")
