"""``nbagent export replay THREAD -o FILE``: a thread recorded from a real model (the real
``openai`` client over HTTP, a real MCP server, a real approval) becomes a script that replays
the same calls and texts offline, with branches where the person's decision could differ."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from nbagent import Session
from nbagent.config import Config, ModelProviderConfig
from nbagent.protocol import ApprovalDecision, AssistantMessage, Compact, Event, FunctionCall
from tests.cli.proc import nbagent
from tests.mcp.conftest import records, server_cfg

SECRET = "sk-test-secret-key-0123456789"
FEAT = "mcp__feat__"


def http_config(server, home: Path, record: Path, wire_api: str = "responses") -> Config:
    """The fake OpenAI-compatible server as the model, the features MCP server as the tools."""
    config = Config(
        model="test-model",
        model_provider="local",
        model_providers={"local": ModelProviderConfig(base_url=server.base_url, wire_api=wire_api)},
        approval_policy="on-request",
        home=str(home),
        mcp_servers={"feat": server_cfg("features.py", record, trusted=True)},
    )
    config.api_key = SECRET
    return config


async def drive(config: Config, prompts: list[str], decision: str, model: str | None = None, cwd: Path | None = None) -> tuple[str, list[Any]]:
    """Run ``prompts`` as turns, answering every approval with ``decision``; the thread and its items."""
    async with Session(config=config, model=model, interactive=True, cwd=cwd) as session:

        def answer(event: Event) -> None:
            if event.msg.type == "approval_requested":
                session.submit(ApprovalDecision(call_id=event.msg.call_id, decision=decision))

        session.subscribe(answer)
        for prompt in prompts:
            await asyncio.wait_for(session.run(prompt), 60)
        return session._thread.id, list(session._thread.items)


def calls_and_texts(items: list[Any]) -> list[tuple[str, Any]]:
    return [
        ("call", (i.name, json.loads(i.arguments))) if isinstance(i, FunctionCall) else ("text", i.text)
        for i in items
        if isinstance(i, FunctionCall | AssistantMessage)
    ]


def export(thread: str, out: Path, home: Path, *extra: str, env: dict[str, str] | None = None):
    return nbagent("export", "replay", thread, "-o", str(out), *extra, home=home, cwd=out.parent, env=env)


@pytest.mark.parametrize("wire_api", ["responses", "chat"])
async def test_a_thread_from_an_http_model_replays_the_same_calls_and_texts(openai_server, tmp_path: Path, wire_api: str) -> None:
    home, record = tmp_path / "home", tmp_path / "record.jsonl"
    openai_server.script([
        {"reasoning": "Read before deleting.", "text": "Let me read the note first.",
         "tool_calls": [{"name": FEAT + "read_note", "arguments": {"key": "draft"}}]},
        {"text": "Now I delete it.", "tool_calls": [{"name": FEAT + "delete_note", "arguments": {"key": "draft"}}]},
        {"text": "Deleted the draft, as you approved.", "usage": {"input_tokens": 40, "output_tokens": 8}},
        {"text": "Nothing else to do."},
    ])  # fmt: skip
    config = http_config(openai_server, home, record, wire_api)
    thread, recorded = await drive(config, ["tidy the drafts", "anything else?"], "approve", cwd=tmp_path)
    assert [r["tool"] for r in records(record)] == ["read_note", "delete_note"]

    done = export(thread, tmp_path / "script.json", home)
    assert done.returncode == 0, done.stderr
    assert f"4 responses from thread {thread}" in done.stdout
    script = json.loads((tmp_path / "script.json").read_text())
    first, second, third, fourth = script["responses"]
    assert first["tool_calls"] == [{"name": FEAT + "read_note", "arguments": {"key": "draft"}}]
    if wire_api == "responses":  # chat completions carry no reasoning summary
        assert first["reasoning"] == "Read before deleting."
    assert second["text"] == "Now I delete it."  # after a call that simply ran: nothing to branch on
    assert list(third["branch"]) == ["error", "approved", "default"]
    assert third["branch"]["approved"] == {"text": "Deleted the draft, as you approved."}
    assert third["branch"]["error"] == third["branch"]["default"]
    assert "approved" in third["branch"]["default"]["text"] and "went otherwise" in third["branch"]["default"]["text"]
    assert fourth == {"text": "Nothing else to do."}  # a new prompt: it does not branch on the last turn's call

    record.unlink()
    offline = config.model_copy(update={"home": str(tmp_path / "home2")})
    _, replayed = await drive(offline, ["tidy the drafts", "anything else?"], "approve",
                              model=f"replay:{tmp_path / 'script.json'}", cwd=tmp_path)  # fmt: skip
    assert calls_and_texts(replayed) == calls_and_texts(recorded)
    assert [r["tool"] for r in records(record)] == ["read_note", "delete_note"]


async def test_a_denied_call_exports_a_branch_that_replays_the_denial_only_when_denied(openai_server, tmp_path: Path) -> None:
    home, record = tmp_path / "home", tmp_path / "record.jsonl"
    openai_server.script([
        {"tool_calls": [{"name": FEAT + "delete_note", "arguments": {"key": "a"}}]},
        {"text": "You denied the delete, so note a is still there."},
    ])  # fmt: skip
    config = http_config(openai_server, home, record)
    thread, _ = await drive(config, ["delete note a"], "deny", cwd=tmp_path)
    assert records(record) == []
    assert export(thread, tmp_path / "denied.json", home).returncode == 0
    branch = json.loads((tmp_path / "denied.json").read_text())["responses"][1]["branch"]
    assert list(branch) == ["error", "denied", "default"]  # a replayed call that fails hears the default

    model = f"replay:{tmp_path / 'denied.json'}"
    _, denied = await drive(config.model_copy(update={"home": str(tmp_path / "h2")}), ["delete note a"], "deny", model, tmp_path)
    assert [i.text for i in denied if isinstance(i, AssistantMessage)] == ["You denied the delete, so note a is still there."]
    _, approved = await drive(config.model_copy(update={"home": str(tmp_path / "h3")}), ["delete note a"], "approve", model, tmp_path)
    (text,) = [i.text for i in approved if isinstance(i, AssistantMessage)]
    assert "was denied" in text and "still there" not in text
    assert [r["tool"] for r in records(record)] == ["delete_note"]


async def test_a_failed_turn_and_a_summary_are_kept_in_their_positions(openai_server, tmp_path: Path) -> None:
    home = tmp_path / "home"
    replay = tmp_path / "rec.json"
    replay.write_text(json.dumps({"responses": [{"text": "Noted: by month."}, {"error": {"code": "server", "message": "the model fell over"}},
                                                {"text": "Back again."}],
                                  "summaries": ["The user wants sales by month."]}))  # fmt: skip
    async with Session(model=f"replay:{replay}", home=home, cwd=tmp_path) as session:
        await session.run("plot sales by month")
        await session.perform(Compact())
        failed = await session.run("and by week")
        await session.run("retry")
        thread = session._thread.id
    assert failed.status == "failed"
    assert export(thread, tmp_path / "out.json", home).returncode == 0
    script = json.loads((tmp_path / "out.json").read_text())
    assert script["summaries"] == ["The user wants sales by month."]
    assert script["responses"][0] == {"text": "Noted: by month."}
    assert "the model fell over" in script["responses"][1]["error"]["message"]
    assert script["responses"][2] == {"text": "Back again."}


async def test_no_api_key_reaches_the_script(openai_server, tmp_path: Path) -> None:
    home, record = tmp_path / "home", tmp_path / "record.jsonl"
    openai_server.script([
        {"text": f"Your key is {SECRET}.", "tool_calls": [{"name": FEAT + "read_note", "arguments": {"key": SECRET}}]},
        {"text": "done"},
    ])  # fmt: skip
    thread, _ = await drive(http_config(openai_server, home, record), ["show my key"], "approve", cwd=tmp_path)
    assert export(thread, tmp_path / "a.json", home).returncode == 0
    assert SECRET not in (tmp_path / "a.json").read_text()

    # Recorded before the key was configured: the rollout holds it; the export, knowing it now, does not.
    later = "sk-configured-later-9876543210"
    replay = tmp_path / "rec.json"
    replay.write_text(json.dumps({"responses": [{"text": f"I saw {later} in the file."}]}))
    async with Session(model=f"replay:{replay}", home=home, cwd=tmp_path) as session:
        await session.run("what is in the file?")
        thread = session._thread.id
    assert later in (home / "threads" / f"{thread}.jsonl").read_text()
    done = export(thread, tmp_path / "b.json", home, env={"OPENAI_API_KEY": later})
    assert done.returncode == 0, done.stderr
    text = (tmp_path / "b.json").read_text()
    assert later not in text and "[redacted]" in text


async def test_bad_threads_and_outputs_are_one_clear_line(tmp_path: Path) -> None:
    home = tmp_path / "home"
    replay = tmp_path / "rec.json"
    replay.write_text(json.dumps({"responses": [{"text": "hi"}]}))
    async with Session(model=f"replay:{replay}", home=home, cwd=tmp_path, thread_name="greeting") as session:
        await session.run("hello")
        thread = session._thread.id

    missing = export("nope", tmp_path / "x.json", home)
    assert missing.returncode == 2 and "no thread with id or name 'nope'" in missing.stderr
    assert len(missing.stderr.splitlines()) == 1 and not (tmp_path / "x.json").exists()

    out = tmp_path / "kept.json"
    out.write_text("my own script")
    refused = export("greeting", out, home)  # by name, as resume takes it
    assert refused.returncode == 2 and str(out) in refused.stderr and "--force" in refused.stderr
    assert out.read_text() == "my own script"
    forced = export(thread[:-4], out, home, "--force")  # a unique id prefix
    assert forced.returncode == 0, forced.stderr
    assert json.loads(out.read_text()) == {"responses": [{"text": "hi"}]}

    nowhere = export("greeting", tmp_path / "z.json", tmp_path / "no-home")
    assert nowhere.returncode == 2 and "no-home does not exist" in nowhere.stderr
    assert not (tmp_path / "no-home").exists()  # reading never creates a home

    folder = export(thread, tmp_path, home)
    assert folder.returncode == 2 and "is a folder" in folder.stderr

    broken = home / "threads" / "thread_broken.jsonl"
    broken.write_text("not json\n{\"also\": \"not a line\"}\n")
    unreadable = export("thread_broken", tmp_path / "y.json", home)
    assert unreadable.returncode != 0 and "thread_broken" in unreadable.stderr and "Traceback" not in unreadable.stderr
    assert not (tmp_path / "y.json").exists()
