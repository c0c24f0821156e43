"""The example workspace server (``nbagent.examples.workspace_server``) touches nothing outside
its root: a path with ``..``, an absolute path or a symlink leading out is refused with an error
naming the path, over real stdio, and the file outside is neither read nor changed."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from nbagent import Session
from nbagent.config import McpServerConfig
from nbagent.protocol import CallTool

SECRET = "top secret outside the root"


@pytest.fixture
def layout(tmp_path: Path) -> tuple[Path, Path]:
    root = tmp_path / "project"
    root.mkdir()
    (root / "ok.py").write_text("x = 1\n")
    outside = tmp_path / "secret.txt"
    outside.write_text(SECRET)
    (root / "link.txt").symlink_to(outside)
    (root / "linkdir").symlink_to(tmp_path, target_is_directory=True)
    return root, outside


async def _calls(root: Path, home: Path, calls: list[tuple[str, dict[str, str]]]) -> list:
    server = McpServerConfig(command=sys.executable, args=["-m", "nbagent.examples.workspace_server", "--root", str(root)])
    async with Session(model="replay:unused.json", home=home, cwd=root, mcp_servers={"workspace": server}) as session:
        await session._servers.ready()
        return [await session.perform(CallTool(name=f"mcp__workspace__{tool}", arguments=args, policy="full-auto")) for tool, args in calls]


HOSTILE = ["../secret.txt", "{outside}", "link.txt", "linkdir/secret.txt", "sub/../../secret.txt"]


async def test_reads_and_patches_outside_the_root_are_refused(layout: tuple[Path, Path], tmp_path: Path):
    root, outside = layout
    paths = [p.format(outside=outside) for p in HOSTILE]
    calls = [("read_file", {"path": p}) for p in paths]
    calls += [("apply_patch", {"path": p, "old": "top secret", "new": "overwritten"}) for p in paths]
    outputs = await _calls(root, tmp_path / "home", calls)
    for (tool, args), out in zip(calls, outputs, strict=True):
        assert out.is_error, f"{tool}({args['path']!r}) was not refused: {out.output}"
        assert "outside the workspace root" in out.output and args["path"] in out.output, out.output
        assert SECRET not in out.output
    assert outside.read_text() == SECRET


async def test_a_path_inside_the_root_still_works(layout: tuple[Path, Path], tmp_path: Path):
    root, _ = layout
    read, patch = await _calls(
        root, tmp_path / "home",
        [("read_file", {"path": "ok.py"}), ("apply_patch", {"path": "./ok.py", "old": "x = 1", "new": "x = 2"})],
    )
    assert not read.is_error and "x = 1" in read.output
    assert not patch.is_error and "+x = 2" in patch.output
    assert (root / "ok.py").read_text() == "x = 2\n"
