"""The generated reference pages say what the code does: every config key of every table with its
type, default and a description, and every command's real ``--help``."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "docs" / "_ext"))

import nbagent_reference as ref  # noqa: E402

ROWS = "\n".join(ref.config_markdown())


def _row(key: str, after: str) -> str:
    """The table row of ``key`` in the section headed ``after``."""
    heading = f"## `{after}`" if after.startswith("[") else f"## {after}"
    section = ROWS[ROWS.index(heading + "\n"):]
    return next(line for line in section.splitlines() if line.startswith(f"| `{key}` |"))


@pytest.mark.parametrize("header,model", [(h, m) for h, m, _ in ref.tables()], ids=[h for h, _, _ in ref.tables()])
def test_every_key_has_its_row_with_a_description(header: str, model):
    for name, field in model.model_fields.items():
        if field.exclude:
            assert f"| `{name}` |" not in ROWS, f"{name} is not a key of the file and must not be listed"
            continue
        cells = [c.strip() for c in _row(name, header).split(" | ")]
        assert cells[-1].rstrip("|").strip(), f"{header} {name}: no description (give the field a docstring)"


def test_types_and_defaults_come_from_the_models():
    assert _row("tool_output_max_bytes", "Top level") == (
        "| `tool_output_max_bytes` | integer (≥ 256) | `16384` | Cap on what the model sees of one tool result. |")
    assert "| `mcp_servers` | tables `[mcp_servers.NAME]` | empty |" in ROWS
    row = _row("default_tools_approval_mode", "[mcp_servers.NAME]")
    assert '"auto" \\| "prompt" \\| "writes" \\| "approve"' in row and '| `"auto"` |' in row
    assert "| `oauth` | table `[mcp_servers.NAME.oauth]` \\| unset | unset |" in ROWS
    assert "api_key" not in ROWS and "| `sources` |" not in ROWS


def test_cli_reference_uses_the_parsers_that_parse():
    found = dict(ref.commands())
    assert {"nbagent run", "nbagent resume", "nbagent threads", "nbagent demo", "nbagent mcp add",
            "nbagent mcp login", "nbagent mcp-server"} <= found.keys()
    # `nbagent mcp` and `mcp-server` are placeholders in the top parser; their real parsers are shown.
    assert "--allow-remote" in ref.help_text(found["nbagent mcp-server"])
    assert "--bearer-token-env-var" in ref.help_text(found["nbagent mcp add"])
    assert ref.help_text(found["nbagent run"]).startswith("usage: nbagent run ")
