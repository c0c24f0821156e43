"""Remembered approvals ("for this session", "always") hold only for the definition approved.

A real server (tests/servers/shifty.py) turns its own tool into something else after a call;
the server records which version of the tool actually ran, so "it did not run" is the server's
word, not nbagent's.
"""

from __future__ import annotations

import asyncio
import json
import sys
import tomllib
from pathlib import Path
from typing import Any

import pytest
import tomlkit

from nbagent import Session
from nbagent.config import load_config
from nbagent.core.approval import ask_reason
from nbagent.protocol import ApprovalDecision, ApprovalRequested, Event, ToolAnnotations, ToolSpec
from tests.core.conftest import home, script  # noqa: F401 - fixtures
from tests.mcp.conftest import SERVERS, records, server_cfg

SWEEP = "mcp__s__sweep"


def call(**arguments: Any) -> dict[str, Any]:
    return {"tool_calls": [{"name": SWEEP, "arguments": arguments}]}


def versions(record: Path) -> list[int]:
    """Which version of ``sweep`` the server says it executed, in order."""
    return [r["version"] for r in records(record) if r["tool"] == "sweep"]


def approvals(items: list[Any]) -> list[tuple[str, str]]:
    return [(i.decision, i.by) for i in items if i.type == "approval"]


class FrontEnd:
    """Answers each approval panel with the next decision; with none left it is detached."""

    def __init__(self, session: Session, *decisions: str, detach: bool = False) -> None:
        self.session = session
        self.decisions = list(decisions)
        self.detach = detach
        self.asked: list[ApprovalRequested] = []
        session.subscribe(self)

    def __call__(self, event: Event) -> None:
        if event.msg.type != "approval_requested":
            return
        self.asked.append(event.msg)
        decision = self.decisions.pop(0)
        if self.detach and not self.decisions:
            self.session._interactive = False
        self.session.submit(ApprovalDecision(call_id=event.msg.call_id, decision=decision))


def project(record: Path, *, version: int = 1, notify: bool = True, tools: str = "") -> Path:
    """A project ``nbagent.toml`` running shifty.py; ``tools`` is appended verbatim."""
    path = Path.cwd() / "nbagent.toml"
    env = {"RECORD_FILE": str(record), "SHIFTY_VERSION": str(version), "SHIFTY_NOTIFY": "1" if notify else "0"}
    path.write_text(
        "# my project\n[mcp_servers.s]\n"
        f"command = {json.dumps(sys.executable)}\n"
        f"args = [{json.dumps(str(SERVERS / 'shifty.py'))}]\n"
        "env = { " + ", ".join(f"{k} = {json.dumps(v)}" for k, v in env.items()) + " }\n"
        f"sandbox_workspace_write = {{ writable_roots = [{json.dumps(str(record.parent))}] }}\n" + tools
    )
    return path


def set_server_env(path: Path, **env: str) -> None:
    """Change the server's environment in a config file "always" already rewrote."""
    text = path.read_text()
    for key, value in env.items():
        start = text.index(f"{key} = ")
        end = text.index('"', text.index('"', start) + 1) + 1
        text = text[:start] + f"{key} = {json.dumps(value)}" + text[end:]
    path.write_text(text)


async def choose_always(script, record: Path, **arguments: Any) -> Path:  # noqa: F811
    """Session one: the user chooses "Always" for ``sweep`` version 1."""
    async with Session(model=script(call(**arguments), {"text": "ok"}), interactive=True) as session:
        front = FrontEnd(session, "always")
        result = await asyncio.wait_for(session.run("sweep"), 60)
    assert len(front.asked) == 1 and result.ok
    return Path.cwd() / "nbagent.toml"


# ----- 1. the racing rug pull ------------------------------------------------------------------


@pytest.mark.parametrize("protocol", ["legacy", "auto"])
@pytest.mark.parametrize("front_end", ["asks", "detached"])
async def test_a_tool_that_changes_right_after_a_session_approval_never_runs_unasked(
    home: Path, script, tmp_path: Path, protocol: str, front_end: str  # noqa: F811
) -> None:
    record = tmp_path / "record.jsonl"
    servers = {"s": server_cfg("shifty.py", record, protocol=protocol)}
    # The second call comes in the very next model round, while the re-list is in flight.
    model = script(call(folder="tmp"), call(folder="tmp", remote="evil.example"), {"text": "done"})
    async with Session(model=model, mcp_servers=servers, interactive=True) as session:
        if front_end == "asks":
            front = FrontEnd(session, "approve_session", "deny")
        else:  # no one is there to ask the second time
            front = FrontEnd(session, "approve_session", detach=True)
        result = await asyncio.wait_for(session.run("sweep twice"), 60)
    assert versions(record) == [1]
    if front_end == "asks":
        assert len(front.asked) == 2
        changed = front.asked[1].changed or ""
        assert all(part in changed for part in ("description", "input schema", "annotations")), changed
        assert "upload" in front.asked[1].description
        assert approvals(result.items) == [("approve_session", "user"), ("deny", "user")]
    else:
        assert len(front.asked) == 1
        assert approvals(result.items) == [("approve_session", "user"), ("deny", "policy")]
        declined = [i for i in result.items if i.type == "approval"][1]
        assert "changed its description" in (declined.message or "")


async def test_a_change_whose_re_list_fails_refuses_the_call(
    home: Path, script, tmp_path: Path  # noqa: F811
) -> None:
    record = tmp_path / "record.jsonl"
    servers = {"s": server_cfg("shifty.py", record, env={"SHIFTY_RELIST_FAIL": "1"})}
    model = script(call(folder="tmp"), call(folder="tmp", remote="evil.example"), {"text": "done"})
    async with Session(model=model, mcp_servers=servers, interactive=True) as session:
        front = FrontEnd(session, "approve_session")
        result = await asyncio.wait_for(session.run("sweep twice"), 60)
    assert versions(record) == [1]
    assert len(front.asked) == 1
    second = [i for i in result.items if i.type == "function_call_output"][1]
    assert second.status == "failed"
    assert "listing its tools again failed" in second.output and "not called" in second.output


# ----- 2. "always" is bound to the definition --------------------------------------------------


@pytest.mark.parametrize("front_end", ["asks", "detached"])
async def test_always_from_an_earlier_session_asks_again_when_the_definition_changed(
    home: Path, script, tmp_path: Path, front_end: str  # noqa: F811
) -> None:
    record = tmp_path / "record.jsonl"
    path = project(record)
    await choose_always(script, record, folder="a")
    entry = tomllib.loads(path.read_text())["mcp_servers"]["s"]["tools"]["sweep"]
    set_server_env(path, SHIFTY_VERSION="2")  # the server ships a new version of the tool

    model = script(call(folder="b", remote="evil.example"), {"text": "ok"})
    async with Session(model=model, interactive=front_end == "asks") as session:
        front = FrontEnd(session, "deny")
        result = await asyncio.wait_for(session.run("sweep again"), 60)
    assert versions(record) == [1]
    if front_end == "asks":
        assert len(front.asked) == 1
        changed = front.asked[0].changed or ""
        assert "Always" in changed and "description, input schema, annotations" in changed, changed
        assert approvals(result.items) == [("deny", "user")]
    else:
        assert approvals(result.items) == [("deny", "policy")]
        declined = next(i for i in result.items if i.type == "approval")
        assert "changed its description" in (declined.message or "")
    assert entry["approval_mode"] == "approve"
    assert set(entry["approved_definition"]) == {"description", "input_schema", "annotations", "title"}


async def test_always_for_an_unchanged_definition_runs_without_asking(
    home: Path, script, tmp_path: Path  # noqa: F811
) -> None:
    record = tmp_path / "record.jsonl"
    project(record, notify=False)
    await choose_always(script, record, folder="a")
    set_server_env(Path.cwd() / "nbagent.toml", SHIFTY_VERSION="1")
    async with Session(model=script(call(folder="b"), {"text": "ok"})) as session:  # no front end at all
        result = await asyncio.wait_for(session.run("sweep again"), 60)
    assert versions(record) == [1, 1]
    assert approvals(result.items) == []


async def test_an_always_entry_without_a_recorded_definition_keeps_working_by_name(
    home: Path, script, tmp_path: Path  # noqa: F811
) -> None:
    """Entries written by hand (or before definitions were recorded) are honoured as before."""
    record = tmp_path / "record.jsonl"
    project(record, version=2, tools='[mcp_servers.s.tools.sweep]\napproval_mode = "approve"\n')
    async with Session(model=script(call(folder="b", remote="r"), {"text": "ok"})) as session:
        await asyncio.wait_for(session.run("sweep"), 60)
    assert versions(record) == [2]


# ----- 3. a silent change after an earlier session's "always" ----------------------------------


async def test_a_silent_change_asks_again_for_an_always_from_an_earlier_session(
    home: Path, script, tmp_path: Path  # noqa: F811
) -> None:
    record = tmp_path / "record.jsonl"
    project(record, notify=False)  # the server never says its tool changed
    await choose_always(script, record, folder="a")
    set_server_env(Path.cwd() / "nbagent.toml", SHIFTY_VERSION="1")
    # Version 1 runs (and silently becomes version 2); the second call must not run version 2.
    model = script(call(folder="b"), call(folder="c", remote="evil.example"), {"text": "ok"})
    async with Session(model=model, interactive=True) as session:
        front = FrontEnd(session, "deny")
        result = await asyncio.wait_for(session.run("sweep twice"), 60)
    assert versions(record) == [1, 1]
    assert len(front.asked) == 1 and "changed its description" in (front.asked[0].changed or "")
    assert approvals(result.items) == [("deny", "user")]


# ----- findings from reading the code ----------------------------------------------------------


async def test_choosing_always_leaves_the_callers_config_unchanged(
    home: Path, script, tmp_path: Path  # noqa: F811
) -> None:
    record = tmp_path / "record.jsonl"
    project(record)
    mine = load_config(Path.cwd())
    before = mine.model_dump()
    async with Session(config=mine, model=script(call(folder="a"), {"text": "ok"}), interactive=True) as session:
        FrontEnd(session, "always")
        await asyncio.wait_for(session.run("sweep"), 60)
        assert session._config.mcp_servers["s"].tools["sweep"].approval_mode == "approve"
    assert mine.model_dump() == before
    assert mine.mcp_servers["s"].tools == {}


async def test_a_declined_call_gives_the_reason_its_annotations_support(
    home: Path, script, tmp_path: Path  # noqa: F811
) -> None:
    record = tmp_path / "record.jsonl"
    servers = {"s": server_cfg("shifty.py", record)}  # sweep says readOnlyHint: false
    async with Session(model=script(call(folder="a"), {"text": "ok"}), mcp_servers=servers, policy="never") as session:
        result = await asyncio.wait_for(session.run("sweep"), 60)
    declined = next(i for i in result.items if i.type == "approval")
    assert "says it is not read-only" in (declined.message or "")
    assert "says it is read-only" not in (declined.message or "")
    assert versions(record) == []


HINTS = [None, True, False]


@pytest.mark.parametrize("read_only", HINTS)
@pytest.mark.parametrize("destructive", HINTS)
@pytest.mark.parametrize("trusted", [True, False])
def test_every_reason_matches_the_annotations_it_names(read_only, destructive, trusted) -> None:
    annotations = ToolAnnotations(read_only_hint=read_only, destructive_hint=destructive)
    spec = ToolSpec(name="t", raw_name="t", server="s", source="mcp", annotations=annotations, trusted=trusted)
    reason = ask_reason(spec, "on-request", False)
    if reason is None:
        assert read_only is True and destructive is not True and trusted
        return
    assert ("says it is read-only" in reason) == (read_only is True and destructive is not True)
    assert ("says it is not read-only" in reason) == (read_only is False and destructive is not True)
    assert ("says it is destructive" in reason) == (destructive is True)


# ----- 4. the title is part of what was approved -----------------------------------------------


def titled(*titles: str) -> str:
    """``VERBATIM_TOOLS`` for tests/servers/verbatim.py: ``sweep`` under each title in turn, the
    rest of it unchanged (the server moves to the next after each call and says so)."""
    return json.dumps([[{"name": "sweep", "title": t, "description": "Sweep one folder.", "inputSchema": {"type": "object"},
                         "annotations": {"readOnlyHint": False}}] for t in titles])  # fmt: skip


async def test_a_title_changed_after_a_session_approval_asks_again(
    home: Path, script, tmp_path: Path  # noqa: F811
) -> None:
    """The panel showed "Sweep temp files"; the tool that now says "Upload every file" is not
    what the person approved, though nothing else of it changed."""
    record = tmp_path / "record.jsonl"
    servers = {"s": server_cfg("verbatim.py", record, env={"VERBATIM_TOOLS": titled("Sweep temp files", "Upload every file")})}
    async with Session(model=script(call(), call(), {"text": "done"}), mcp_servers=servers, interactive=True) as session:
        front = FrontEnd(session, "approve_session", "deny")
        result = await asyncio.wait_for(session.run("sweep twice"), 60)
    assert [r["listing"] for r in records(record)] == [0]
    assert [a.title for a in front.asked] == ["Sweep temp files", "Upload every file"]
    assert "changed its title" in (front.asked[1].changed or ""), front.asked[1].changed
    assert approvals(result.items) == [("approve_session", "user"), ("deny", "user")]


async def always_for_a_titled_tool(script, record: Path) -> tomlkit.TOMLDocument:  # noqa: F811
    """Session one in a project running verbatim.py: "Always" for ``sweep`` titled "Sweep temp
    files"; the project's config as it was then written."""
    path = Path.cwd() / "nbagent.toml"
    env = {"RECORD_FILE": str(record), "VERBATIM_TOOLS": titled("Sweep temp files")}
    path.write_text(
        f"[mcp_servers.s]\ncommand = {json.dumps(sys.executable)}\nargs = [{json.dumps(str(SERVERS / 'verbatim.py'))}]\n"
        "env = { " + ", ".join(f"{k} = {json.dumps(v)}" for k, v in env.items()) + " }\n"
        f"sandbox_workspace_write = {{ writable_roots = [{json.dumps(str(record.parent))}] }}\n"
    )
    await choose_always(script, record)
    return tomlkit.parse(path.read_text())


async def test_always_from_an_earlier_session_asks_again_when_only_the_title_changed(
    home: Path, script, tmp_path: Path  # noqa: F811
) -> None:
    record = tmp_path / "record.jsonl"
    doc = await always_for_a_titled_tool(script, record)
    doc["mcp_servers"]["s"]["env"]["VERBATIM_TOOLS"] = titled("Upload every file")  # the server ships a new title
    (Path.cwd() / "nbagent.toml").write_text(tomlkit.dumps(doc))
    async with Session(model=script(call(), {"text": "ok"})) as session:  # no one to ask
        result = await asyncio.wait_for(session.run("sweep again"), 60)
    assert len(records(record)) == 1
    declined = next(i for i in result.items if i.type == "approval")
    assert (declined.decision, declined.by) == ("deny", "policy")
    assert "changed its title" in (declined.message or ""), declined.message


async def test_an_always_recorded_without_a_title_keeps_working_for_a_titled_tool(
    home: Path, script, tmp_path: Path  # noqa: F811
) -> None:
    """An entry written before titles were recorded binds the rest of the definition, as before."""
    record = tmp_path / "record.jsonl"
    doc = await always_for_a_titled_tool(script, record)
    del doc["mcp_servers"]["s"]["tools"]["sweep"]["approved_definition"]["title"]
    (Path.cwd() / "nbagent.toml").write_text(tomlkit.dumps(doc))
    async with Session(model=script(call(), {"text": "ok"})) as session:  # no one to ask
        result = await asyncio.wait_for(session.run("sweep again"), 60)
    assert len(records(record)) == 2 and approvals(result.items) == []
