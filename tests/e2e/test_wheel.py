"""The built wheel carries the prebuilt extension: installed into a fresh venv (no node, no
build step at the user's end), ``jupyter labextension list`` shows it enabled."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest

from tests.e2e.jupyter import BUILT_EXTENSION, REPO

pytestmark = [
    pytest.mark.timeout(300),
    pytest.mark.skipif(not (BUILT_EXTENSION / "package.json").is_file(), reason="the extension is not built (make labextension)"),
]


def run(*command: str | Path, env: dict[str, str] | None = None, cwd: Path | None = None) -> str:
    proc = subprocess.run([str(c) for c in command], capture_output=True, text=True, env=env, cwd=cwd, timeout=240)
    assert proc.returncode == 0, f"{command} failed:\n{proc.stdout}\n{proc.stderr}"
    return proc.stdout + proc.stderr


def test_the_wheel_installs_an_enabled_prebuilt_extension(tmp_path: Path) -> None:
    # No build isolation: the build backend and hook are in the test venv, and the hook skips npm
    # because the prebuilt output exists; so this needs neither node nor the network.
    run(sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", tmp_path / "dist", REPO)
    (wheel,) = (tmp_path / "dist").glob("nbagent-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    data = [n for n in names if "/share/jupyter/labextensions/nbagent/" in n]
    assert any(n.endswith("/install.json") for n in data) and any(n.endswith("/package.json") for n in data)
    assert any("/static/remoteEntry." in n for n in data)
    assert not any(n.startswith("nbagent/labextension/") for n in names)  # shipped once, as data

    # A fresh venv; jupyterlab comes from this test venv through a .pth (install with --no-deps).
    venv = tmp_path / "venv"
    run(sys.executable, "-m", "venv", "--without-pip", venv)
    python = venv / "bin" / "python"
    purelib = run(python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])").strip()
    Path(purelib, "outer-venv.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    run(sys.executable, "-m", "pip", "--python", python, "install", "--no-deps", "--no-index", "-q", wheel)

    env = {k: v for k, v in os.environ.items() if not k.startswith(("JUPYTER", "NBAGENT"))}
    env.update(JUPYTER_DATA_DIR=str(tmp_path / "data"), JUPYTER_CONFIG_DIR=str(tmp_path / "config"))
    listing = run(python, "-c", "import sys; from jupyterlab.labextensions import main; sys.exit(main())", "list",
                  env=env, cwd=tmp_path)
    installed = next(line for line in listing.splitlines() if line.strip().startswith("nbagent "))
    assert "enabled" in installed and "OK" in installed and "(python, nbagent)" in installed, listing
    assert f"{venv}/share/jupyter/labextensions" in listing
    # The installed package is the wheel's, not the source tree's.
    location = run(python, "-c", "import nbagent; print(nbagent.__file__)", env=env, cwd=tmp_path).strip()
    assert location.startswith(str(venv)), location

    # The wheel's console script runs a scripted turn headless and prints JSON events.
    hello = REPO / "tests" / "fixtures" / "replay_hello.json"
    out = run(venv / "bin" / "nbagent", "run", "-m", f"replay:{hello}", "--json", "say hello",
              env={**env, "NBAGENT_HOME": str(tmp_path / "home")}, cwd=tmp_path)
    events = [json.loads(line) for line in out.splitlines() if line.startswith("{")]
    assert [e["type"] for e in events][-2:] == ["turn_completed", "shutdown_complete"]
    assert all({"seq", "thread_id", "turn_id"} <= e.keys() for e in events)
