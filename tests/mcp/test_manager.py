"""The manager against real stdio servers: startup, catalogue, routing, failures, elicitation,
progress, logs and changing tool lists, on both protocol generations."""

from __future__ import annotations

import re
import time

import pytest

from nbagent.protocol import (
    ImageBlock,
    McpLog,
    McpStartupComplete,
    McpStartupUpdate,
    McpToolsChanged,
    TextBlock,
    ToolSpec,
    WarningEvent,
)
from nbagent.protocol.elicitation import ElicitOutcome
from tests.waiting import until

from .conftest import Harness, alive, call_info

NAME_RE = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
BOTH = pytest.mark.parametrize("protocol", ["legacy", "auto"])


def _text(result) -> str:
    return "".join(block.text for block in result.content if isinstance(block, TextBlock))


def _spec(manager, raw: str, server: str | None = None) -> ToolSpec:
    return next(s for s in manager.list_tools() if s.raw_name == raw and (server is None or s.server == server))


async def test_startup_is_concurrent_and_isolated(harness: Harness) -> None:
    servers = {
        "slow": harness.cfg("slow_start.py", env={"SLOW_START_SEC": "3"}),
        "fast": harness.cfg("crashy.py"),
        "broken": harness.cfg("slow_start.py", env={"SLOW_START_SEC": "0", "SLOW_START_FAIL": "bad config"}),
        "stuck": harness.cfg("slow_start.py", env={"SLOW_START_SEC": "60"}, startup_timeout_sec=1.0),
    }
    t0 = time.time()  # the harness stamps each event's arrival with the wall clock
    manager = await harness.start(servers)
    total = time.time() - t0
    updates = {(e.server, e.status): e for e in harness.of(McpStartupUpdate)}
    assert total < 3 + 3.0, total  # bounded by the slowest healthy server, not the sum
    slow_ready = harness.when(updates[("slow", "ready")])
    assert harness.when(updates[("fast", "ready")]) < slow_ready - 0.5  # not held up by the 3 s server
    assert harness.when(updates[("stuck", "failed")]) < slow_ready - 0.5  # reported at its own timeout
    assert harness.when(updates[("stuck", "failed")]) - t0 >= 1.0
    assert "bad config" in (updates[("broken", "failed")].stderr_tail or "")
    assert "did not start within 1 s" in (updates[("stuck", "failed")].error or "")
    complete = harness.of(McpStartupComplete)[-1]
    assert sorted(complete.ready) == ["fast", "slow"] and sorted(complete.failed) == ["broken", "stuck"]
    assert {s.server for s in manager.list_tools()} == {"fast", "slow"}


async def test_catalogue_fields_and_filters(harness: Harness) -> None:
    cfg = harness.cfg(
        "features.py",
        disabled_tools=["delete_note"],
        default_tools_approval_mode="prompt",
        tools={"read_note": {"approval_mode": "approve"}},
        trusted=True,
    )
    only = harness.cfg("crashy.py", enabled_tools=["ok"])
    manager = await harness.start({"feat": cfg, "crash": only})
    specs = {s.name: s for s in manager.list_tools()}
    assert "mcp__feat__delete_note" not in specs
    assert [s.raw_name for s in specs.values() if s.server == "crash"] == ["ok"]
    read = specs["mcp__feat__read_note"]
    assert read.source == "mcp" and read.server == "feat" and read.raw_name == "read_note"
    assert read.approval_mode == "approve" and read.trusted
    assert read.annotations is not None and read.annotations.read_only_hint is True
    assert read.display_name == "Read a note"
    assert read.input_schema and read.input_schema["properties"]["key"]["type"] == "string"
    assert read.parameters["type"] == "object" and "key" in read.parameters["properties"]
    assert len(read.definition_hash) >= 8
    assert specs["mcp__feat__work"].approval_mode == "prompt" and not specs["mcp__crash__ok"].trusted
    assert specs["mcp__feat__stats"].output_schema is not None
    assert manager.list_tools() == manager.list_tools()  # cached, stable
    assert manager.status()["feat"].tools == len([s for s in specs.values() if s.server == "feat"])


@BOTH
async def test_hostile_names_and_pagination(harness: Harness, protocol: str) -> None:
    manager = await harness.start({"evil": harness.cfg("hostile.py", protocol=protocol)})
    specs = manager.list_tools()
    assert len(specs) == 10  # 4 pages of 3
    names = [s.name for s in specs]
    assert all(NAME_RE.match(n) for n in names), names
    assert len(set(names)) == len(names)
    clash = [s.name for s in specs if s.raw_name in ("clash.a", "clash_a")]
    assert len(set(clash)) == 2 and all(len(n) <= 64 for n in clash)
    for spec in specs:
        assert spec.parameters.get("type") == "object"
        result = await manager.call_tool(spec, {}, call_info(f"c_{spec.raw_name[:10]}"))
        assert not result.is_error, (spec.raw_name, result)
    executed = [r["tool"] for r in harness.records()]
    assert sorted(executed) == sorted(s.raw_name for s in specs)  # routed back to the exact raw names
    zero = next(s for s in specs if s.raw_name == "zero_width")
    assert "\u200b" in zero.description  # kept verbatim; front ends make it visible


async def test_crash_mid_call_then_restart(harness: Harness) -> None:
    manager = await harness.start({"crash": harness.cfg("crashy.py"), "other": harness.cfg("features.py")})
    pid = manager.status()["crash"].pid
    result = await manager.call_tool(_spec(manager, "die"), {"code": 7}, call_info())
    assert result.is_error
    assert "'die'" in _text(result) and "'crash'" in _text(result)
    status = manager.status()["crash"]  # as the call's error returns, not later: %agent mcp then says so
    assert status.state == "failed" and "exit code 7" in (status.error or "")
    assert "dying with code 7" in (status.stderr_tail or "")
    assert not alive(pid)
    assert all(s.server != "crash" for s in manager.list_tools())
    failed = [e for e in harness.of(McpStartupUpdate) if e.server == "crash" and e.status == "failed"]
    assert failed
    # The other server and the manager carry on.
    assert not (await manager.call_tool(_spec(manager, "read_note"), {"key": "k"}, call_info("c2"))).is_error
    # A stale spec for the crashed server gives an error result, not an exception.
    stale = await manager.call_tool(ToolSpec(name="mcp__crash__ok", server="crash", raw_name="ok"), {}, call_info())
    assert stale.is_error and "not connected" in _text(stale)
    assert await manager.restart("crash")
    result = await manager.call_tool(_spec(manager, "ok"), {"text": "again"}, call_info("c3"))
    assert not result.is_error and "again" in _text(result)
    assert [r["tool"] for r in harness.records() if r["tool"] in ("die", "ok")] == ["die", "ok"]


async def test_tool_errors_and_timeouts(harness: Harness) -> None:
    manager = await harness.start({"crash": harness.cfg("crashy.py", tool_timeout_sec=0.5)})
    boom = await manager.call_tool(_spec(manager, "boom"), {}, call_info())
    assert boom.is_error and "boom" in _text(boom)
    t0 = time.monotonic()
    slow = await manager.call_tool(_spec(manager, "sleepy"), {"seconds": 5}, call_info("c2"))
    assert time.monotonic() - t0 < 2
    assert slow.is_error and "timed out after 0.5 s" in _text(slow) and "'sleepy'" in _text(slow)
    ok = await manager.call_tool(_spec(manager, "ok"), {}, call_info("c3"))
    assert not ok.is_error  # the server survived the timeout
    unknown = await manager.call_tool(ToolSpec(name="mcp__crash__nope", server="crash", raw_name="nope"), {},
                                      call_info("c4"))  # fmt: skip
    assert unknown.is_error and "'nope'" in _text(unknown)
    nowhere = await manager.call_tool(ToolSpec(name="mcp__x__y", server="x", raw_name="y"), {}, call_info("c5"))
    assert nowhere.is_error and "no such server" in _text(nowhere)


@BOTH
async def test_list_changed_reaches_next_list_tools(harness: Harness, protocol: str) -> None:
    manager = await harness.start({"feat": harness.cfg("features.py", protocol=protocol)})
    assert all(s.raw_name != "extra" for s in manager.list_tools())
    result = await manager.call_tool(_spec(manager, "grow"), {}, call_info())
    assert not result.is_error
    await until(lambda: harness.of(McpToolsChanged), "tools/list_changed", 5)
    extra = _spec(manager, "extra")
    assert extra.name == "mcp__feat__extra"
    assert "extra 3" in _text(await manager.call_tool(extra, {"n": 3}, call_info("c2")))


@BOTH
async def test_progress_and_logs(harness: Harness, protocol: str) -> None:
    manager = await harness.start({"feat": harness.cfg("features.py", protocol=protocol)})
    seen: list[tuple[float, float | None, str | None]] = []

    async def on_progress(value: float, total: float | None, message: str | None) -> None:
        seen.append((value, total, message))

    result = await manager.call_tool(_spec(manager, "work"), {"steps": 3}, call_info(), on_progress)
    assert not result.is_error and "done 3" in _text(result)
    assert seen == [(1, 3, "step 1"), (2, 3, "step 2"), (3, 3, "step 3")]
    logs = [e for e in harness.of(McpLog) if e.server == "feat"]
    assert [e.data for e in logs][-3:] == ["working on step 1", "working on step 2", "working on step 3"]
    assert logs[-1].level == "info"


async def test_images_and_structured_content(harness: Harness) -> None:
    manager = await harness.start({"feat": harness.cfg("features.py")})
    picture = await manager.call_tool(_spec(manager, "picture"), {}, call_info())
    assert any(isinstance(b, ImageBlock) and b.mime_type == "image/png" for b in picture.content)
    mixed = await manager.call_tool(_spec(manager, "mixed"), {}, call_info("c2"))
    assert "a caption" in _text(mixed) and any(isinstance(b, ImageBlock) for b in mixed.content)
    stats = await manager.call_tool(_spec(manager, "stats"), {"values": [1, 2, 3]}, call_info("c3"))
    assert stats.structured == {"mean": 2.0, "count": 3}
    assert _text(stats)  # text kept alongside structured content


@pytest.mark.parametrize(
    ("outcome", "expect"),
    [
        (ElicitOutcome(action="accept", content={"name": "Ada", "age": 36}), "accept:Ada"),
        (ElicitOutcome(action="decline"), "decline:"),
        (ElicitOutcome(action="cancel"), "cancel:"),
    ],
)
async def test_push_elicitation(harness: Harness, outcome: ElicitOutcome, expect: str) -> None:
    harness.answers.outcomes = [outcome]
    manager = await harness.start({"push": harness.cfg("elicit_push.py", protocol="legacy")})
    result = await manager.call_tool(_spec(manager, "ask_name"), {}, call_info("call_push"))
    assert not result.is_error and expect in _text(result)
    (asked,) = harness.answers.asked
    assert asked.server == "push" and asked.mode == "form" and asked.call_id == "call_push"
    assert asked.message == "Who are you?" and "name" in asked.requested_schema["properties"]
    (rec,) = [r for r in harness.records() if r["tool"] == "ask_name"]
    assert rec["action"] == outcome.action
    if outcome.action == "accept":
        assert rec["content"] == {"name": "Ada", "age": 36}


@BOTH
@pytest.mark.parametrize("action", ["accept", "decline", "cancel"])
async def test_resolve_elicitation(harness: Harness, protocol: str, action: str) -> None:
    content = {"date": "2026-01-02", "seats": 4, "confirm": True} if action == "accept" else None
    harness.answers.outcomes = [ElicitOutcome(action=action, content=content)]
    manager = await harness.start({"res": harness.cfg("elicit_resolve.py", protocol=protocol)})
    result = await manager.call_tool(_spec(manager, "book"), {"restaurant": "Chez"}, call_info("call_r"))
    assert not result.is_error, _text(result)
    assert harness.answers.asked[0].call_id == "call_r"
    (rec,) = [r for r in harness.records() if r["tool"] == "book"]
    assert rec["action"] == action
    if action == "accept":
        assert "booked Chez on 2026-01-02 for 4" in _text(result) and rec["content"]["seats"] == 4


async def test_elicitation_ids_are_unique_and_url_mode(harness: Harness) -> None:
    harness.answers.outcomes = [
        ElicitOutcome(action="accept", content={"name": "A"}),
        ElicitOutcome(action="accept", content={"name": "B"}),
        ElicitOutcome(action="accept"),
    ]
    manager = await harness.start({"push": harness.cfg("elicit_push.py", protocol="legacy")})
    twice = await manager.call_tool(_spec(manager, "ask_twice"), {}, call_info())
    assert "A,B" in _text(twice)
    url = await manager.call_tool(_spec(manager, "ask_url"), {}, call_info("c2"))
    assert "accept" in _text(url)
    ids = [e.request_id for e in harness.answers.asked]
    assert len(set(ids)) == 3
    assert harness.answers.asked[2].mode == "url" and harness.answers.asked[2].url == "https://example.com/login"


@pytest.mark.parametrize(("script", "tool", "args", "protocol"), [
    ("elicit_push.py", "sleep_then_ask", {"seconds": 0.2}, "legacy"),
    ("elicit_resolve.py", "slow_book", {"seconds": 0.2}, "auto"),
    ("elicit_resolve.py", "slow_book", {"seconds": 0.2}, "legacy"),
])  # fmt: skip
async def test_elicitation_wait_excluded_from_timeout(harness: Harness, script, tool, args, protocol) -> None:
    harness.answers.delay = 1.5  # the user takes longer than the whole tool timeout
    harness.answers.outcomes = [ElicitOutcome(action="accept", content={"name": "x", "date": "2026-01-01"})]
    manager = await harness.start({"s": harness.cfg(script, protocol=protocol, tool_timeout_sec=1.0)})
    t0 = time.monotonic()
    result = await manager.call_tool(_spec(manager, tool), args, call_info())
    assert time.monotonic() - t0 > 1.5
    assert not result.is_error, _text(result)
    assert "accept" in _text(result)


async def test_sampling_is_declined_with_warning(harness: Harness) -> None:
    manager = await harness.start({"push": harness.cfg("elicit_push.py", protocol="legacy")})
    result = await manager.call_tool(_spec(manager, "sample"), {}, call_info())
    assert "declined" in _text(result)
    warnings = [e.message for e in harness.of(WarningEvent)]
    assert any("sample" in w and "push" in w for w in warnings)


async def test_auto_downgrades_for_push_elicitation(harness: Harness) -> None:
    harness.answers.outcomes = [ElicitOutcome(action="accept", content={"name": "Zed"})]
    manager = await harness.start({"push": harness.cfg("elicit_push.py")})
    assert manager.status()["push"].protocol_version == "2026-07-28"
    first = await manager.call_tool(_spec(manager, "ask_name"), {}, call_info())
    assert first.is_error and "legacy" in _text(first)
    await until(lambda: manager.status()["push"].state == "ready" and manager.status()["push"].protocol_version == "2025-11-25",
                "the reconnect on the legacy protocol", 30)
    second = await manager.call_tool(_spec(manager, "ask_name"), {}, call_info("c2"))
    assert "accept:Zed" in _text(second)


async def test_resources_prompts_add_remove(harness: Harness) -> None:
    manager = await harness.start({"feat": harness.cfg("features.py")})
    resources = await manager.list_resources("feat")
    assert any(r["uri"] == "note://hello" for r in resources)
    contents = await manager.read_resource("feat", "note://hello")
    assert contents[0]["text"] == "hello from a resource"
    prompts = await manager.list_prompts("feat")
    assert [p["name"] for p in prompts] == ["review"]
    prompt = await manager.get_prompt("feat", "review", {"code": "x = 1"})
    assert "x = 1" in str(prompt["messages"])
    assert await manager.add("crash", harness.cfg("crashy.py"))
    assert any(s.server == "crash" for s in manager.list_tools())
    pid = manager.status()["crash"].pid
    await manager.remove("crash")
    assert all(s.server != "crash" for s in manager.list_tools())
    assert "crash" not in manager.status() and not alive(pid)
    with pytest.raises(ValueError):
        await manager.add("bad name", harness.cfg("crashy.py"))


@BOTH
async def test_call_refused_when_tool_changed_since_the_model_saw_it(harness: Harness, protocol: str) -> None:
    """The definition an approval was given for is the one that runs: a call made with a spec
    whose definition the server has since changed is refused, never sent to the new tool."""
    manager = await harness.start({"feat": harness.cfg("features.py", protocol=protocol)})
    old = _spec(manager, "archive")
    assert not (await manager.call_tool(_spec(manager, "reword"), {}, call_info("c1"))).is_error
    new = await until(lambda: (spec := _spec(manager, "archive")).definition_hash != old.definition_hash and spec,
                      "the changed tool in the catalogue", 5)
    stale = await manager.call_tool(old, {"key": "k"}, call_info("c2"))
    assert stale.is_error and "changed" in _text(stale)
    assert [r["tool"] for r in harness.records()] == ["reword"]
    fresh = await manager.call_tool(new, {"key": "k"}, call_info("c3"))
    assert not fresh.is_error and "archived k" in _text(fresh)
