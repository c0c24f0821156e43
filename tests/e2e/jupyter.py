"""A throwaway JupyterLab server for browser tests: isolated config, data and settings, the
extension taken from the repository's build output, listening on 127.0.0.1 with a token."""

from __future__ import annotations

import json
import os
import secrets
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
BUILT_EXTENSION = REPO / "nbagent" / "labextension"
WIRE = (
    "%load_ext nbagent\nfrom nbagent.notebook.extension import get_agent\n_session = await get_agent().ready()\n"
    "print('tools:', ', '.join(sorted(s.name for s in _session.snapshot().tools)))"
)
"""A notebook's first cell: loads the agent and waits for its session (its tools printed)."""


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def code_cell(source: str) -> dict[str, Any]:
    return {"cell_type": "code", "execution_count": None, "metadata": {}, "outputs": [], "source": source}


def agent_notebook(notebook: Path, base_url: str, policy: str, cells: list[dict[str, Any]]) -> None:
    """Write ``notebook``: ``cells`` below a first cell that loads the agent; and its folder's
    ``nbagent.toml``: the local OpenAI-compatible test server at ``base_url`` (its key from
    ``NBAGENT_E2E_FAKE_KEY``) under approval ``policy``."""
    (notebook.parent / "nbagent.toml").write_text(
        f'model = "fake-model"\nmodel_provider = "fake"\napproval_policy = "{policy}"\n\n'
        f'[model_providers.fake]\nbase_url = "{base_url}"\nenv_key = "NBAGENT_E2E_FAKE_KEY"\n'
    )
    notebook.write_text(json.dumps({
        "cells": [code_cell(WIRE), *cells],
        "metadata": {"kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}},
        "nbformat": 4, "nbformat_minor": 5,
    }))


class JupyterLab:
    """``with JupyterLab(root, base) as lab:`` starts the server and stops it (and its kernels).

    ``rtc``: real-time collaboration (jupyter-collaboration, when installed). Off unless asked:
    with it on, the server saves every open notebook itself, which tests of what the person's own
    save writes must not have."""

    def __init__(self, root: Path, base: Path, extra_env: dict[str, str] | None = None, *, rtc: bool = False) -> None:
        self.root = root
        self.rtc = rtc
        self.base = base
        self.port = free_port()
        self.token = secrets.token_hex(16)
        self.url = f"http://127.0.0.1:{self.port}"
        self.log_path = base / "jupyterlab.log"
        self.extra_env = extra_env or {}
        self.process: subprocess.Popen[bytes] | None = None

    def env(self) -> dict[str, str]:
        data = self.base / "jupyter-path"
        extensions = data / "labextensions"
        extensions.mkdir(parents=True, exist_ok=True)
        link = extensions / "nbagent"
        if not link.exists():
            link.symlink_to(BUILT_EXTENSION, target_is_directory=True)
        settings = self.base / "settings" / "@jupyterlab" / "apputils-extension"
        settings.mkdir(parents=True, exist_ok=True)
        # No news/update toasts over the panels under test.
        (settings / "notification.jupyterlab-settings").write_text(
            json.dumps({"fetchNews": "false", "checkForUpdates": False})
        )
        if not self.rtc:
            # The server side is off by --YDocExtension.disable_rtc; these are its page's parts
            # (shared-document provider, people panel), so the page is what it is without them.
            labconfig = self.base / "config" / "labconfig"
            labconfig.mkdir(parents=True, exist_ok=True)
            (labconfig / "page_config.json").write_text(json.dumps({"disabledExtensions": {
                "@jupyter/collaboration-extension": True, "@jupyter/docprovider-extension": True,
            }}))
        env = dict(os.environ)
        env.update(
            JUPYTER_PATH=str(data),
            JUPYTER_CONFIG_DIR=str(self.base / "config"),
            JUPYTER_DATA_DIR=str(self.base / "data"),
            JUPYTER_RUNTIME_DIR=str(self.base / "runtime"),
            IPYTHONDIR=str(self.base / "ipython"),
            JUPYTERLAB_SETTINGS_DIR=str(self.base / "settings"),
            JUPYTERLAB_WORKSPACES_DIR=str(self.base / "workspaces"),
        )
        env.update(self.extra_env)
        return env

    def __enter__(self) -> JupyterLab:
        command = [
            sys.executable, "-m", "jupyterlab", "--no-browser", "--allow-root",
            "--ServerApp.ip=127.0.0.1", f"--ServerApp.port={self.port}", "--ServerApp.port_retries=0",
            f"--IdentityProvider.token={self.token}", f"--ServerApp.root_dir={self.root}",
            "--LabApp.expose_app_in_browser=True", "--JupyterNotebookApp.expose_app_in_browser=True",
            f"--LabApp.user_settings_dir={self.base / 'settings'}",
            f"--LabApp.workspaces_dir={self.base / 'workspaces'}",
            f"--YDocExtension.disable_rtc={not self.rtc}",
        ]
        log = self.log_path.open("wb")
        self.process = subprocess.Popen(command, cwd=self.root, env=self.env(), stdout=log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"JupyterLab exited at start:\n{self.log_tail()}")
            try:
                with urllib.request.urlopen(f"{self.url}/api/status?token={self.token}", timeout=2) as response:
                    if response.status == 200:
                        return self
            except OSError:
                time.sleep(0.2)
        self.__exit__()
        raise RuntimeError(f"JupyterLab did not answer within 60 s:\n{self.log_tail()}")

    def __exit__(self, *exc: object) -> None:
        if self.process is None or self.process.poll() is not None:
            return
        self.process.terminate()  # the server shuts its kernels down on SIGTERM
        try:
            self.process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(timeout=10)

    def log_tail(self, lines: int = 60) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return ""
