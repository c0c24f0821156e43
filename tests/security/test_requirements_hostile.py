"""No user-side file, variable, flag or caller loosens an administrator's requirements.toml, and
a requirements file the user could change is not read.

The real ``nbagent`` command runs from a Python environment of its own whose ``etc/nbagent/``
holds the requirements, as an administrator's venv would (``sys.prefix``): nbagent finds them
where it always looks, with no variable pointing there."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import sysconfig
import venv
from pathlib import Path

import pytest

import nbagent.config.requirements as req
from nbagent.config import RequirementError, load_config
from nbagent.server.overrides import Overrides
from nbagent.server.threads import Defaults
from tests.cli.proc import ROOT, SERVERS, stdio_server
from tests.trusting import clean_environ

REQUIRE = """
allowed_approval_policies = ["on-request", "untrusted"]
allowed_sandbox_modes = ["read-only", "workspace-write"]
allow_config_override = false
allow_trusting_folders = false

[mcp_servers.echo.identity]
command = "{python}"
args = ["{script}"]
"""


@pytest.fixture(scope="module")
def admin_env(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A Python environment (nbagent's own packages through a .pth) with ``etc/nbagent/requirements.toml``."""
    prefix = tmp_path_factory.mktemp("admin-venv")
    venv.EnvBuilder(with_pip=False, symlinks=True).create(prefix)
    site = sysconfig.get_paths(vars={"base": str(prefix), "platbase": str(prefix)})["purelib"]
    ours = sysconfig.get_paths()["purelib"]
    Path(site, "nbagent-test.pth").write_text(f"import site; site.addsitedir({ours!r})\n")
    etc = prefix / "etc" / "nbagent"
    etc.mkdir(parents=True)
    (etc / req.REQUIREMENTS_FILE).write_text(
        REQUIRE.format(python=sys.executable, script=SERVERS / "echo.py"))
    return prefix


def _nbagent(prefix: Path, *args: str, home: Path, cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    environ = clean_environ() | {"NBAGENT_HOME": str(home)} | (env or {})
    return subprocess.run([str(prefix / "bin" / "python"), "-m", "nbagent.cli", *args], capture_output=True,
                          text=True, timeout=120, env=environ, cwd=cwd)


@pytest.fixture
def user(tmp_path: Path) -> tuple[Path, Path]:
    home, work = tmp_path / "home", tmp_path / "work"
    home.mkdir()
    work.mkdir()
    return home, work


def test_command_line_flags_are_refused_naming_the_requirement(admin_env: Path, user: tuple[Path, Path]) -> None:
    home, work = user
    file = admin_env / "etc" / "nbagent" / req.REQUIREMENTS_FILE
    hello = str(ROOT / "tests" / "fixtures" / "replay_hello.json")
    run = _nbagent(admin_env, "run", "-m", f"replay:{hello}", "--policy", "full-auto", "hi", home=home, cwd=work)
    assert run.returncode != 0
    assert (f"approval_policy = 'full-auto' is not allowed by requirements: allowed_approval_policies in {file} "
            "allows 'on-request', 'untrusted'") in run.stderr
    sandbox = _nbagent(admin_env, "run", "-m", f"replay:{hello}", "--sandbox", "danger-full-access", "hi",
                       home=home, cwd=work)
    assert sandbox.returncode != 0
    assert f"sandbox_mode = 'danger-full-access' is not allowed by requirements: allowed_sandbox_modes in {file}" in sandbox.stderr
    serve = _nbagent(admin_env, "mcp-server", "--allow-config-override", home=home, cwd=work)
    assert serve.returncode != 0
    assert f"--allow-config-override is not allowed by requirements: allow_config_override = false in {file}" in serve.stderr
    trust = _nbagent(admin_env, "trust", str(work), home=home, cwd=work)
    assert trust.returncode != 0 and "allow_trusting_folders = false" in trust.stderr
    assert not (home / "config.toml").exists() or "projects" not in (home / "config.toml").read_text()


def test_user_files_and_variables_do_not_loosen(admin_env: Path, user: tuple[Path, Path]) -> None:
    home, work = user
    (home / "config.toml").write_text(f'approval_policy = "full-auto"\nsandbox_mode = "danger-full-access"\n'
                                      f'[projects."{work}"]\ntrust_level = "trusted"\n')
    (work / "nbagent.toml").write_text('approval_policy = "never"\n')
    hello = str(ROOT / "tests" / "fixtures" / "replay_hello.json")
    run = _nbagent(admin_env, "run", "--json", "-m", f"replay:{hello}", "hi", home=home, cwd=work,
                   env={"NBAGENT_TRUSTED_FOLDERS": str(work)})
    assert run.returncode == 0, run.stderr
    configured = next(json.loads(line) for line in run.stdout.splitlines() if '"session_configured"' in line)
    assert configured["policy"] == "on-request"
    assert "approval_policy = 'full-auto' is not allowed by requirements" in run.stdout + run.stderr
    assert "trusting a folder is not allowed by requirements" in run.stdout + run.stderr


def test_servers_not_in_the_allowlist_show_disabled_by_requirements(admin_env: Path, user: tuple[Path, Path]) -> None:
    home, work = user
    file = admin_env / "etc" / "nbagent" / req.REQUIREMENTS_FILE
    echo = SERVERS / "echo.py"
    (home / "config.toml").write_text(
        stdio_server("echo", echo) + stdio_server("lookalike", echo) + stdio_server("echo2", echo, "--extra"))
    listed = _nbagent(admin_env, "mcp", "list", home=home, cwd=work)
    assert listed.returncode == 0, listed.stderr
    rows = {line.split()[0]: line for line in listed.stdout.splitlines()[1:]}
    assert "yes" in rows["echo"].split()[2]
    assert f"disabled by requirements ({file})" in rows["lookalike"]
    tools = _nbagent(admin_env, "inspect", "tools", home=home, cwd=work)
    assert tools.returncode == 0, tools.stderr
    assert f"server lookalike: disabled by requirements ({file})" in tools.stdout
    assert "<- echo/" in tools.stdout and "<- lookalike/" not in tools.stdout
    login = _nbagent(admin_env, "mcp", "login", "lookalike", home=home, cwd=work)
    assert login.returncode != 0 and f"is disabled by requirements ({file}): nothing to sign in to" in login.stderr


def test_an_mcp_callers_overrides_do_not_loosen(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    etc = tmp_path / "etc"
    etc.mkdir()
    (etc / req.REQUIREMENTS_FILE).write_text('allowed_approval_policies = ["on-request", "never"]\n'
                                             'allowed_sandbox_modes = ["read-only"]\n')
    monkeypatch.setattr(req, "SEARCH_PATH", (etc,))
    monkeypatch.setenv("NBAGENT_HOME", str(tmp_path / "home"))
    defaults = Defaults(policy="on-request", allow_config_override=True)
    with pytest.raises(RequirementError, match="approval_policy = 'full-auto' is not allowed"):
        defaults.load_config(tmp_path, Overrides(policy="full-auto"))
    with pytest.raises(RequirementError, match="sandbox_mode = 'workspace-write' is not allowed"):
        defaults.load_config(tmp_path, Overrides(config={"sandbox_mode": "workspace-write"}))
    assert defaults.load_config(tmp_path, Overrides(policy="never")).approval_policy == "never"


def test_a_requirements_file_the_user_can_change_is_not_read(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    etc = tmp_path / "etc"
    etc.mkdir()
    file = etc / req.REQUIREMENTS_FILE
    file.write_text('allowed_approval_policies = ["untrusted"]\n')
    nobody = 65534
    assert req.admin_owned(file, uid=nobody, gids=[nobody]) is None  # root's, in root's folders
    os.chown(file, nobody, nobody)
    assert "can be changed by the user running nbagent (uid 65534; owner uid 65534" in (req.admin_owned(file, uid=nobody, gids=[nobody]) or "")
    os.chown(file, 0, 0)
    os.chmod(etc, 0o777)  # a folder anyone can write: the file in it can be replaced
    assert f"{etc} can be changed" in (req.admin_owned(file, uid=nobody, gids=[nobody]) or "")
    os.chmod(etc, 0o777 | stat.S_ISVTX)  # sticky, as /tmp: only the file's owner may replace it
    assert req.admin_owned(file, uid=nobody, gids=[nobody]) is None
    os.chmod(etc, 0o775)
    os.chown(etc, 0, nobody)  # group-writable by a group the user is in
    assert f"{etc} can be changed" in (req.admin_owned(file, uid=nobody, gids=[nobody]) or "")
    assert req.admin_owned(file, uid=nobody, gids=[]) is None

    monkeypatch.setattr(req, "SEARCH_PATH", (etc,))
    monkeypatch.setattr(os, "getuid", lambda: nobody)
    monkeypatch.setattr(os, "getgroups", lambda: [nobody])
    config = load_config(tmp_path, environ={"NBAGENT_HOME": str(tmp_path / "home")}, overrides={"approval_policy": "never"})
    assert config.approval_policy == "never"
    assert any(f"{file}: not read: {etc} can be changed by the user running nbagent" in w for w in config.warnings)


async def test_serving_a_session_is_refused_when_the_requirements_forbid_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from nbagent import Session
    from nbagent.kit.notebook_server import start_notebook_server

    etc = tmp_path / "etc"
    etc.mkdir()
    (etc / req.REQUIREMENTS_FILE).write_text("allow_serve = false\n")
    monkeypatch.setattr(req, "SEARCH_PATH", (etc,))
    async with Session(cwd=tmp_path, home=tmp_path / "home") as session:
        with pytest.raises(RequirementError, match=f"%agent serve is not allowed by requirements: allow_serve = false in {etc}"):
            await start_notebook_server(session)
        assert not (tmp_path / "home" / "run").exists()  # no token written, nothing listening


async def test_a_session_holds_turns_ops_and_added_servers_to_the_requirements(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from nbagent import Session
    from nbagent.config import ConfigError
    from nbagent.protocol import AddMcpServer, OverrideTurnContext

    etc = tmp_path / "etc"
    etc.mkdir()
    file = etc / req.REQUIREMENTS_FILE
    file.write_text('allowed_approval_policies = ["on-request", "untrusted"]\n'
                    f'[mcp_servers.echo.identity]\ncommand = {json.dumps(sys.executable)}\n'
                    f'args = [{json.dumps(str(SERVERS / "echo.py"))}]\n')
    monkeypatch.setattr(req, "SEARCH_PATH", (etc,))
    hello = f"replay:{ROOT / 'tests' / 'fixtures' / 'replay_hello.json'}"
    async with Session(cwd=tmp_path, home=tmp_path / "home", model=hello) as session:
        refused = await session.run("hi", policy="full-auto")
        assert refused.status == "failed" and refused.error_code == "config"
        assert f"approval_policy = 'full-auto' is not allowed by requirements: allowed_approval_policies in {file}" in (refused.error or "")
        assert (await session.run("hi", policy="untrusted")).status == "completed"
        with pytest.raises(Exception, match="approval_policy = 'never' is not allowed by requirements"):
            await session.perform(OverrideTurnContext(policy="never"))
        await session.perform(AddMcpServer(name="lookalike", config={"command": sys.executable,
                                                                      "args": [str(SERVERS / "echo.py")]}))
        status = session.snapshot().servers["lookalike"]
        assert (status.state, status.error) == ("disabled", f"disabled by requirements ({file})")
        from nbagent.notebook.startup import status_line

        assert status_line(status) == f"disabled by requirements ({file})"  # as %agent lists it
        config = load_config(tmp_path, environ={"NBAGENT_HOME": str(tmp_path / "home")})
    with pytest.raises(ConfigError, match="approval_policy = 'full-auto' is not allowed"):
        Session(cwd=tmp_path, config=config, policy="full-auto")


async def test_the_connection_manager_never_starts_a_server_the_requirements_do_not_admit(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from nbagent.config import McpServerConfig
    from nbagent.mcp.manager import McpConnectionManager

    etc = tmp_path / "etc"
    etc.mkdir()
    (etc / req.REQUIREMENTS_FILE).write_text('[mcp_servers.echo.identity]\ncommand = "/nowhere/echo"\n')
    monkeypatch.setattr(req, "SEARCH_PATH", (etc,))
    config = load_config(tmp_path, environ={"NBAGENT_HOME": str(tmp_path / "home")})
    record = tmp_path / "started"
    servers = {"echo": McpServerConfig(command=sys.executable, args=["-c", f"open({str(record)!r}, 'w')"])}

    async def no_one(_request: object) -> object:
        raise AssertionError("nothing asks")

    async with McpConnectionManager(servers, lambda _event: None, no_one, tmp_path / "logs", config) as mcp:  # type: ignore[arg-type]
        status = mcp.status()["echo"]
    assert (status.state, status.error) == ("disabled", f"disabled by requirements ({etc / req.REQUIREMENTS_FILE})")
    assert not record.exists()
