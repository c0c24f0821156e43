"""A real JupyterHub deployment of nbagent on this machine, for tests/hub/ and bench/hub.py.

What an administrator would set up, made from nothing (and kept between runs where that is safe):

- a venv from the system's ``/usr/bin/python3`` in a folder every user can read (``ROOT``), with
  ``jupyterhub``, ``jupyterlab`` and nbagent built from this clone (reinstalled when the clone's
  sources change); its ``etc/nbagent`` holds the administrator's ``requirements.toml`` and
  ``managed_config.toml``, which only root can write;
- real Linux users (``useradd -m``);
- one shared streamable-HTTP MCP server (``team_server.py``) with a bearer token per user, each
  user's token given only to that user's server through ``Spawner.environment``;
- the hub, with ``configurable-http-proxy`` from npm (``tests/hub/node_modules``), a local-process
  spawner and a service token to start servers and reach them through the proxy.

:class:`Hub` stops the hub by its pid (which stops the users' servers) and then whatever the hub
left running (its proxy, a user's process), each by its pid.
"""

from __future__ import annotations

import hashlib
import json
import os
import pwd
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx
import websocket
from jupyter_client.jsonutil import json_default
from jupyter_client.session import Session

REPO = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
ROOT = Path(os.environ.get("NBAGENT_HUB_ROOT", "/opt/nbagent-hub"))
"""Where the hub's venv lives: readable by every user (a venv under /root is not)."""
VENV = ROOT / "venv"
ADMIN = VENV / "etc" / "nbagent"
"""The venv's ``sys.prefix/etc/nbagent``: where nbagent reads an administrator's files."""
PROXY = HERE / "node_modules" / ".bin" / "configurable-http-proxy"
SYSTEM_PYTHON = "/usr/bin/python3"
HUB_PACKAGES = ("jupyterhub>=5,<6", "jupyterlab>=4.2,<5")
STAMP = VENV / "nbagent-source.sha256"

REQUIREMENTS = """\
allowed_approval_policies = ["on-request", "untrusted"]
allowed_sandbox_modes = ["read-only", "workspace-write"]

[mcp_servers.team.identity]
url = "{url}"
"""
MANAGED = """\
model = "replay:{script}"

[mcp_servers.team]
url = "{url}"
bearer_token_env_var = "TEAM_MCP_TOKEN"
default_tools_approval_mode = "approve"
"""
TURN = {"responses": [
    {"text": "Asking the team server who I am.", "tool_calls": [{"name": "mcp__team__whoami", "arguments": {}}]},
    {"branch": {"ok": {"text": "The team server answered."}, "default": {"text": "The call did not run."}}},
]}
"""The scripted model's turn: one call of the shared server's ``whoami``, then a reply."""

LOOSER = 'approval_policy = "full-auto"\nsandbox_mode = "danger-full-access"\n'
"""What each user's own ``nbagent.toml`` asks for, and the requirements rule out."""


def run(*command: str | Path, **kw: Any) -> str:
    proc = subprocess.run([str(c) for c in command], capture_output=True, text=True, timeout=600, **kw)
    if proc.returncode:
        raise RuntimeError(f"{' '.join(map(str, command))} failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}")
    return proc.stdout


def source_digest() -> str:
    """The clone's package as built: its sources, the built extension and the project file."""
    digest = hashlib.sha256()
    files = sorted(p for p in (REPO / "nbagent").rglob("*") if p.is_file() and "__pycache__" not in p.parts)
    for path in [REPO / "pyproject.toml", *files]:
        digest.update(str(path.relative_to(REPO)).encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()


def ensure_venv() -> Path:
    """The hub's venv, made when missing and given this clone's nbagent when it is not the
    installed one; the hub's proxy, installed from ``tests/hub/package-lock.json`` when missing."""
    if not PROXY.exists():
        run("npm", "ci", "--prefix", HERE, "--no-progress", "--loglevel=error", "--no-fund", "--no-audit")
    if not (VENV / "bin" / "jupyterhub").exists():
        ROOT.mkdir(mode=0o755, parents=True, exist_ok=True)
        run(SYSTEM_PYTHON, "-m", "venv", "--clear", VENV)
        run(VENV / "bin" / "pip", "install", "-q", "--disable-pip-version-check", *HUB_PACKAGES)
    digest = source_digest()
    if not STAMP.exists() or STAMP.read_text() != digest:
        dist = ROOT / "dist"
        shutil.rmtree(dist, ignore_errors=True)
        run(sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", dist, REPO)
        (wheel,) = dist.glob("nbagent-*.whl")
        pip = (VENV / "bin" / "pip", "install", "-q", "--disable-pip-version-check")
        run(*pip, wheel)  # its dependencies, when new
        run(*pip, "--force-reinstall", "--no-deps", wheel)  # the same version number, new code
        STAMP.write_text(digest)
    return VENV


def ensure_users(names: Iterable[str]) -> dict[str, pwd.struct_passwd]:
    """Real Linux users (``useradd -m``: a home as Debian makes it, mode 755), each with its
    nbagent state of earlier runs removed."""
    users = {}
    for name in names:
        try:
            pwd.getpwnam(name)
        except KeyError:
            run("useradd", "-m", "-s", "/bin/bash", name)
        users[name] = entry = pwd.getpwnam(name)
        home = Path(entry.pw_dir)
        for stale in (".nbagent", ".local/share/jupyter/runtime", "agent.ipynb", "nbagent.toml"):
            path = home / stale
            shutil.rmtree(path, ignore_errors=True) if path.is_dir() else path.unlink(missing_ok=True)
    return users


def run_as(user: str, *command: str | Path, cwd: str | Path = "/") -> subprocess.CompletedProcess[str]:
    """``command`` run as ``user``: their uid and group only, their home, a plain ``PATH``."""
    entry = pwd.getpwnam(user)
    return subprocess.run([str(c) for c in command], capture_output=True, text=True, timeout=120, cwd=cwd,
                          user=entry.pw_uid, group=entry.pw_gid, extra_groups=[],
                          env={"HOME": entry.pw_dir, "USER": user, "PATH": "/usr/bin:/bin"})


def write_as(user: pwd.struct_passwd, path: Path, text: str) -> None:
    """Write ``path`` as if ``user`` had (the file theirs)."""
    path.write_text(text)
    os.chown(path, user.pw_uid, user.pw_gid)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def wait(condition: Callable[[], Any], what: str, timeout: float, log: Path | None = None) -> Any:
    """Poll ``condition`` until truthy; fail naming ``what`` (and the end of ``log``)."""
    deadline = time.monotonic() + timeout
    while not (value := condition()):
        if time.monotonic() > deadline:
            tail = log.read_text(errors="replace")[-3000:] if log and log.exists() else ""
            raise AssertionError(f"timed out after {timeout:g} s waiting for {what}\n{tail}")
        time.sleep(0.05)
    return value


def alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def stop(pid: int, timeout: float = 10) -> None:
    """SIGTERM ``pid``, then SIGKILL if it is still there after ``timeout``."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.kill(pid, sig)
        except ProcessLookupError:
            return
        deadline = time.monotonic() + timeout
        while alive(pid) and time.monotonic() < deadline:
            time.sleep(0.05)
        if not alive(pid):
            return


def pids_of(uid: int) -> list[int]:
    """The live processes running as ``uid``."""
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                if os.stat(f"/proc/{entry}").st_uid == uid and alive(int(entry)):
                    found.append(int(entry))
            except FileNotFoundError:
                pass
    return found


@dataclass
class Cell:
    """What one executed cell showed: its text outputs, and its error if it raised."""

    text: str
    error: str | None
    seconds: float


@dataclass
class Hub:
    """A running hub: its URL, the service token and the users' MCP tokens."""

    run_dir: Path
    users: dict[str, pwd.struct_passwd]
    url: str = ""
    token: str = ""
    user_tokens: dict[str, str] = field(default_factory=dict)
    record: Path = Path()
    procs: list[subprocess.Popen[bytes]] = field(default_factory=list)
    """The hub and the MCP server, in the order they are stopped."""

    @property
    def log(self) -> Path:
        return self.run_dir / "hub.log"

    def api(self, method: str, path: str, **kw: Any) -> httpx.Response:
        headers = {"Authorization": f"token {self.token}"}
        return httpx.request(method, f"{self.url}/hub/api{path}", headers=headers, timeout=60, **kw)

    def server_api(self, user: str, method: str, path: str, **kw: Any) -> httpx.Response:
        """The user's own Jupyter server, through the proxy, with the service token."""
        headers = {"Authorization": f"token {self.token}"}
        return httpx.request(method, f"{self.url}/user/{user}/api{path}", headers=headers, timeout=60, **kw)

    def start_servers(self, users: Iterable[str]) -> None:
        """Start each user's server through the hub's REST API, all at once, and wait until
        every one is ready."""
        users = list(users)
        for user in users:
            got = self.api("POST", f"/users/{user}/server")
            assert got.status_code in (201, 202), f"starting {user}'s server: {got.status_code} {got.text}"

        def ready(user: str) -> bool:
            servers = self.api("GET", f"/users/{user}").json().get("servers", {})
            return bool(servers.get("", {}).get("ready"))

        for user in users:
            wait(lambda: ready(user), f"{user}'s server to be ready", 60, self.log)  # noqa: B023

    def open_notebook(self, user: str, name: str = "agent.ipynb") -> str:
        """A notebook in ``user``'s home, with a kernel session; the kernel's id."""
        nb = {"cells": [], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
        put = self.server_api(user, "PUT", f"/contents/{quote(name)}", json={"type": "notebook", "content": nb})
        assert put.status_code in (200, 201), put.text
        session = self.server_api(user, "POST", "/sessions",
                                  json={"path": name, "type": "notebook", "kernel": {"name": "python3"}})
        assert session.status_code == 201, session.text
        return str(session.json()["kernel"]["id"])

    def run_cells(self, user: str, *cells: str) -> tuple[Kernel, list[Cell]]:
        """Open a notebook in ``user``'s server and run ``cells`` in its kernel, in order."""
        kernel = self.kernel(user, self.open_notebook(user))
        return kernel, [kernel.execute(code) for code in cells]

    def run_cells_everywhere(self, cells: Iterable[str], users: Iterable[str] | None = None) -> dict[str, tuple[Kernel, list[Cell]]]:
        """:meth:`run_cells` in each user's server at the same time."""
        users, cells = list(self.users if users is None else users), list(cells)
        with ThreadPoolExecutor(len(users)) as pool:
            return dict(zip(users, pool.map(lambda user: self.run_cells(user, *cells), users), strict=True))

    def kernel(self, user: str, kernel_id: str) -> Kernel:
        ws = self.url.replace("http", "ws", 1) + f"/user/{user}/api/kernels/{kernel_id}/channels"
        return Kernel(websocket.create_connection(ws, header=[f"Authorization: token {self.token}"], timeout=120))

    def stop(self) -> None:
        """Stop the hub (it stops its proxy and the users' servers) and the MCP server by their
        pids, then anything any of them left: the proxy by its pid file, the users' processes."""
        for proc in self.procs:
            stop(proc.pid, timeout=20)
            proc.wait()
        proxy = self.run_dir / "jupyterhub-proxy.pid"
        if proxy.exists() and (text := proxy.read_text().strip()).isdigit():
            stop(int(text))
        for user in self.users.values():
            for pid in pids_of(user.pw_uid):
                stop(pid)


class Kernel:
    """A kernel's channels over the server's websocket, as JupyterLab talks to it."""

    def __init__(self, ws: websocket.WebSocket) -> None:
        self.ws = ws
        self.session = Session(key=b"", username="deploy")

    def execute(self, code: str) -> Cell:
        msg = self.session.msg("execute_request", {"code": code, "silent": False, "store_history": True,
                                                   "user_expressions": {}, "allow_stdin": False, "stop_on_error": True})
        msg["channel"] = "shell"
        started = time.monotonic()
        self.ws.send(json.dumps(msg, default=json_default))
        texts: list[str] = []
        error = None
        while True:
            reply = json.loads(self.ws.recv())
            if reply.get("parent_header", {}).get("msg_id") != msg["header"]["msg_id"]:
                continue
            kind, content = reply["msg_type"], reply["content"]
            if kind == "stream":
                texts.append(content["text"])
            elif kind in ("display_data", "execute_result", "update_display_data"):
                texts.append(content.get("data", {}).get("text/plain", ""))
            elif kind == "error":
                error = f"{content['ename']}: {content['evalue']}"
            elif kind == "status" and content["execution_state"] == "idle" and reply["channel"] == "iopub":
                return Cell("\n".join(texts), error, time.monotonic() - started)

    def close(self) -> None:
        self.ws.close()


def start_hub(run_dir: Path, names: list[str]) -> Hub:
    """The whole deployment for users ``names``: venv, users, shared MCP server, admin files,
    each user's own config asking for more than the requirements allow, and the hub."""
    ensure_venv()
    users = ensure_users(names)
    run_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
    hub = Hub(run_dir=run_dir, users=users, token=secrets.token_hex(24), record=run_dir / "team-calls.jsonl")
    try:
        _start(hub)
    except BaseException:
        hub.stop()
        raise
    return hub


def _start(hub: Hub) -> None:
    run_dir = hub.run_dir
    hub.user_tokens = {name: secrets.token_hex(24) for name in hub.users}
    tokens = run_dir / "team-tokens.json"
    tokens.write_text(json.dumps({token: name for name, token in hub.user_tokens.items()}))
    tokens.chmod(0o600)
    (run_dir / "user-tokens.json").write_text(json.dumps(hub.user_tokens))
    (run_dir / "user-tokens.json").chmod(0o600)

    mcp_port = free_port()
    mcp_url = f"http://127.0.0.1:{mcp_port}/mcp"
    mcp_log = (run_dir / "team-server.log").open("w")
    team = subprocess.Popen([sys.executable, HERE / "team_server.py", str(mcp_port), tokens, hub.record],
                            stdout=mcp_log, stderr=mcp_log, start_new_session=True)
    hub.procs.append(team)

    ADMIN.mkdir(parents=True, exist_ok=True)
    script = ADMIN / "hub-turn.json"
    script.write_text(json.dumps(TURN))
    (ADMIN / "requirements.toml").write_text(REQUIREMENTS.format(url=mcp_url))
    (ADMIN / "managed_config.toml").write_text(MANAGED.format(url=mcp_url, script=script))
    # Each user asks for more than the requirements allow in their own nbagent.toml, and trusts
    # their home, as they would, so that file is read (all at once, while the hub starts).
    for user in hub.users.values():
        write_as(user, Path(user.pw_dir) / "nbagent.toml", LOOSER)
    pool = ThreadPoolExecutor(len(hub.users))
    trusted = {name: pool.submit(run_as, name, VENV / "bin" / "nbagent", "trust", user.pw_dir, cwd=user.pw_dir)
               for name, user in hub.users.items()}
    pool.shutdown(wait=False)

    port, api_port, hub_port = free_port(), free_port(), free_port()
    hub.url = f"http://127.0.0.1:{port}"
    config = run_dir / "jupyterhub_config.py"
    config.write_text(HUB_CONFIG.format(
        port=port, api_port=api_port, hub_port=hub_port, proxy=PROXY, singleuser=VENV / "bin" / "jupyterhub-singleuser",
        users=sorted(hub.users), token=hub.token, run_dir=run_dir, password=secrets.token_hex(12)))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("JUPYTER", "NBAGENT", "PYTHON", "VIRTUAL_ENV"))}
    env["CONFIGPROXY_AUTH_TOKEN"] = secrets.token_hex(24)
    env["PATH"] = f"{VENV / 'bin'}:{env.get('PATH', '/usr/bin:/bin')}"
    log = hub.log.open("w")
    proc = subprocess.Popen([VENV / "bin" / "jupyterhub", "-f", config], cwd=run_dir, env=env,
                            stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    hub.procs.insert(0, proc)

    def up() -> bool:
        if proc.poll() is not None:
            raise AssertionError(f"the hub exited ({proc.returncode}):\n{hub.log.read_text()[-3000:]}")
        try:
            return hub.api("GET", "/").status_code == 200 and _listening(mcp_port)
        except httpx.HTTPError:
            return False

    wait(up, "the hub and the team server to answer", 60, hub.log)
    for name, done in trusted.items():
        assert done.result().returncode == 0, f"nbagent trust as {name}: {done.result().stderr}"


def _listening(port: int) -> bool:
    with socket.socket() as sock:
        return sock.connect_ex(("127.0.0.1", port)) == 0


HUB_CONFIG = """\
import json
from pathlib import Path

c = get_config()  # noqa: F821
c.JupyterHub.ip = "127.0.0.1"
c.JupyterHub.port = {port}
c.JupyterHub.hub_ip = "127.0.0.1"
c.JupyterHub.hub_port = {hub_port}
c.JupyterHub.db_url = "sqlite:///{run_dir}/jupyterhub.sqlite"
c.JupyterHub.cookie_secret_file = "{run_dir}/jupyterhub_cookie_secret"
c.ConfigurableHTTPProxy.command = ["{proxy}"]
c.ConfigurableHTTPProxy.api_url = "http://127.0.0.1:{api_port}"
c.JupyterHub.authenticator_class = "dummy"
c.DummyAuthenticator.password = "{password}"
c.Authenticator.allowed_users = set({users!r})
c.JupyterHub.spawner_class = "jupyterhub.spawner.LocalProcessSpawner"
c.Spawner.cmd = ["{singleuser}"]
c.Spawner.notebook_dir = "~"
c.Spawner.start_timeout = 60
c.Spawner.http_timeout = 60
c.JupyterHub.tornado_settings = {{"slow_spawn_timeout": 0}}  # a start request answers at once
c.JupyterHub.services = [{{"name": "deploy", "api_token": "{token}"}}]
c.JupyterHub.load_roles = [{{"name": "deploy", "services": ["deploy"],
                             "scopes": ["admin:users", "admin:servers", "access:servers"]}}]

# Each user's own token for the shared MCP server, in that user's server's environment only:
# read by the hub (root) from a file only root can read, never written where a user could read it.
TOKENS = json.loads(Path("{run_dir}/user-tokens.json").read_text())
c.Spawner.environment = {{"TEAM_MCP_TOKEN": lambda spawner: TOKENS[spawner.user.name]}}
"""


if __name__ == "__main__":
    # `python -m tests.hub.deploy`: make (or bring up to date) the hub's venv and proxy, as CI does
    # before the tests.
    print(f"JupyterHub deployment venv: {ensure_venv()}")
