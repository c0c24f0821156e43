"""Bad input on the command line gets one clear line on stderr, never a traceback.

Each case runs the real ``nbagent`` command; the line must name what was wrong (the flag, the
address, the folder) so a person can fix it without reading code.
"""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.cli.proc import can_drop_privilege, events_of, nbagent, one_line_error

HELLO = "replay:tests/fixtures/replay_hello.json"


@pytest.mark.parametrize(
    ("address", "named"),
    [
        ("notaport", "notaport"),
        ("127.0.0.1:99999", "99999"),
        ("127.0.0.1:-1", "-1"),
        ("127.0.0.1:", "127.0.0.1:"),
        ("127.0.0.1:80x", "80x"),
        ("[::1", "[::1"),
    ],
)
def test_cli_http_address_that_is_not_host_port_is_one_line(tmp_path: Path, address: str, named: str) -> None:
    line = one_line_error(nbagent("mcp-server", "--http", address, home=tmp_path, timeout=30))
    assert "--http" in line and named in line


def test_cli_http_port_in_use_is_one_line_naming_the_port(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        line = one_line_error(nbagent("mcp-server", "--http", f"127.0.0.1:{port}", home=tmp_path, timeout=30))
    assert f"127.0.0.1:{port}" in line and "in use" in line


def test_cli_demo_output_that_cannot_be_created_is_one_line(tmp_path: Path) -> None:
    line = one_line_error(nbagent("demo", "--output", "/proc/nope", home=tmp_path, timeout=60))
    assert "/proc/nope" in line


@pytest.mark.parametrize("argv", [["threads"], ["run", "-m", HELLO, "hi"], ["tools"], ["index", "rebuild"]])
def test_cli_home_that_is_a_file_is_one_line_naming_it(tmp_path: Path, argv: list[str]) -> None:
    home = tmp_path / "home"
    home.write_text("not a folder")
    line = one_line_error(nbagent(*argv, home=home, cwd=tmp_path))
    assert str(home) in line
    assert home.read_text() == "not a folder"


@pytest.fixture
def read_only_home(tmp_path: Path) -> Iterator[Path]:
    """A home folder the (unprivileged) nbagent process may read but not write."""
    if not can_drop_privilege():
        pytest.skip("setpriv is needed to drop root's capabilities")
    home = tmp_path / "home"
    home.mkdir()
    home.chmod(0o555)
    yield home
    home.chmod(0o755)


@pytest.mark.parametrize("argv", [["run", "-m", HELLO, "hi"], ["resume", "some-thread", "-m", HELLO, "hi"]])
def test_cli_read_only_home_is_one_line_naming_it(read_only_home: Path, argv: list[str]) -> None:
    line = one_line_error(nbagent(*argv, home=read_only_home, cwd=read_only_home.parent, unprivileged=True))
    assert str(read_only_home) in line
    assert list(read_only_home.iterdir()) == []


@pytest.mark.parametrize("ref", ["", "   "])
def test_cli_resume_of_an_empty_thread_id_is_refused_and_starts_nothing(tmp_path: Path, ref: str) -> None:
    line = one_line_error(nbagent("resume", ref, "-m", HELLO, "--json", "hi", home=tmp_path))
    assert "thread" in line
    assert json.loads(nbagent("threads", "--json", home=tmp_path).stdout) == []


def test_cli_resume_of_an_unknown_thread_is_one_line(tmp_path: Path) -> None:
    first = nbagent("run", "-m", HELLO, "--json", "one", home=tmp_path)
    known = events_of(first.stdout)[0]["thread_id"]
    line = one_line_error(nbagent("resume", "thread-nope", "-m", HELLO, "hi", home=tmp_path))
    assert "thread-nope" in line
    assert [t["id"] for t in json.loads(nbagent("threads", "--json", home=tmp_path).stdout)] == [known]


@pytest.mark.parametrize(
    "argv",
    [
        ["--bogus"],
        ["--bogus", "threads"],
        ["threads", "--bogus"],
        ["run", "--bogus", "hi"],
        ["tools", "--bogus=1"],
        ["mcp-server", "--bogus"],
    ],
)
def test_cli_unknown_flag_is_one_line_naming_it(tmp_path: Path, argv: list[str]) -> None:
    line = one_line_error(nbagent(*argv, home=tmp_path, timeout=30))
    assert "--bogus" in line


@pytest.mark.parametrize("argv", [[], ["run"], ["frobnicate"], ["run", "--policy", "sometimes", "x"], ["threads", "--limit", "x"]])
def test_cli_missing_or_wrong_arguments_are_one_line(tmp_path: Path, argv: list[str]) -> None:
    line = one_line_error(nbagent(*argv, home=tmp_path, timeout=30))
    assert line.startswith("nbagent") and "--help" in line


def test_cli_mcp_server_bad_config_override_is_one_line(tmp_path: Path) -> None:
    line = one_line_error(nbagent("mcp-server", "-c", "max_tool_rounds", home=tmp_path, timeout=30))
    assert "max_tool_rounds" in line

