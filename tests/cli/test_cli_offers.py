"""``nbagent resources`` / ``nbagent prompts``: what configured MCP servers offer besides tools,
listed and read from the shell; a hostile server's text is shown, not obeyed."""

from __future__ import annotations

from pathlib import Path

from tests.cli.proc import SERVERS, nbagent, one_line_error, stdio_server


def _work(tmp_path: Path, *servers: str) -> Path:
    work = tmp_path / "work"
    work.mkdir()
    (work / "nbagent.toml").write_text("".join(stdio_server(name, SERVERS / f"{name}.py") for name in servers))
    return work


def test_resources_and_prompts_are_listed_and_read(tmp_path: Path) -> None:
    work, home = _work(tmp_path, "features", "offers"), tmp_path / "home"
    listing = nbagent("resources", home=home, cwd=work)
    assert listing.returncode == 0, listing.stderr
    assert "features: 1 resource(s)\n  note://hello  hello_note — A greeting note" in listing.stdout
    assert "offers: 4 resource(s)" in listing.stdout
    assert "\x1b" not in listing.stdout and "<U+001B>]52;c;" in listing.stdout
    read = nbagent("resources", "features", "note://hello", home=home, cwd=work)
    assert read.returncode == 0 and read.stdout == "hello from a resource\n", read.stderr
    prompts = nbagent("prompts", "features", home=home, cwd=work)
    assert "features: 1 prompt(s)\n  review code=…" in prompts.stdout and "offers:" not in prompts.stdout
    filled = nbagent("prompts", "offers", "review", "code=x", home=home, cwd=work)
    assert filled.returncode == 0, filled.stderr
    assert filled.stdout.startswith("user: Review (terse):<U+202E>\nx<U+001B>") and "\u202e" not in filled.stdout


def test_bad_requests_are_one_line_errors(tmp_path: Path) -> None:
    work, home = _work(tmp_path, "features"), tmp_path / "home"
    assert "no MCP server named 'nosuch'" in one_line_error(nbagent("resources", "nosuch", "x", home=home, cwd=work))
    assert "KEY=VALUE, not 'code'" in one_line_error(nbagent("prompts", "features", "review", "code", home=home, cwd=work))
    assert "usage: nbagent resources" in one_line_error(nbagent("resources", "a", "b", "c", home=home, cwd=work))
    refused = one_line_error(nbagent("resources", "features", "note://nosuch", home=home, cwd=work))
    assert refused == "nbagent resources: MCP server 'features': MCPError: Unknown resource: note://nosuch"
