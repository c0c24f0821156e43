"""``@modelcontextprotocol/server-everything`` (npm, over stdio) through the manager.

Installed by ``npm ci --prefix tests/node``; skipped only when node_modules is missing.
"""

from __future__ import annotations

import json
from typing import Any

from nbagent.mcp.elicitation import validate_content
from nbagent.protocol import ElicitationRequested, ImageBlock, McpStartupUpdate, TextBlock, WarningEvent
from nbagent.protocol.elicitation import ElicitOutcome

from .conftest import Harness, call_info

NAME_RE = r"^[a-zA-Z0-9_-]{1,64}$"


def _text(result) -> str:
    return "".join(block.text for block in result.content if isinstance(block, TextBlock))


def _value(prop: dict[str, Any]) -> Any:
    """A valid answer for one form field, whatever its kind."""
    if "enum" in prop:
        return prop["enum"][0]
    if "oneOf" in prop:
        return prop["oneOf"][0]["const"]
    kind = prop.get("type")
    if kind == "boolean":
        return True
    if kind in ("integer", "number"):
        return prop.get("default", prop.get("minimum", 1))
    if kind == "array":
        items = prop.get("items", {})
        options = items.get("enum") or [branch["const"] for branch in items.get("anyOf", [])]
        return options[: max(1, prop.get("minItems", 1))]
    fmt = prop.get("format")
    return {"email": "ada@example.com", "uri": "https://example.com/ada", "date": "1990-12-10",
            "date-time": "1990-12-10T10:00:00Z"}.get(fmt, "Ada Lovelace")  # fmt: skip


def _fill(schema: dict[str, Any]) -> dict[str, Any]:
    return {name: _value(prop) for name, prop in schema.get("properties", {}).items()}


async def test_server_everything(harness: Harness, everything_cfg) -> None:
    problems: list[list[str]] = []
    asked_events: list[ElicitationRequested] = []

    async def answer(event: ElicitationRequested) -> ElicitOutcome:
        asked_events.append(event)
        content = _fill(event.requested_schema or {})
        problems.append(validate_content(event.requested_schema or {}, content))
        return ElicitOutcome(action="accept", content=content)

    harness.answers = answer  # type: ignore[assignment]
    manager = await harness.start({"everything": everything_cfg()})
    ready = [e for e in harness.of(McpStartupUpdate) if e.status == "ready"]
    assert ready, harness.events
    specs = {s.raw_name: s for s in manager.list_tools()}
    assert len(specs) == ready[0].tools >= 10
    assert {"echo", "get-sum", "trigger-long-running-operation", "trigger-elicitation-request"} <= set(specs)
    for spec in specs.values():
        assert spec.name.startswith("mcp__everything__") and __import__("re").match(NAME_RE, spec.name)
        assert spec.parameters["type"] == "object"
    assert specs["echo"].annotations and specs["echo"].annotations.read_only_hint is True

    echo = await manager.call_tool(specs["echo"], {"message": "hello nbagent"}, call_info("c1"))
    assert not echo.is_error and "hello nbagent" in _text(echo)
    total = await manager.call_tool(specs["get-sum"], {"a": 2, "b": 40}, call_info("c2"))
    assert "42" in _text(total)
    image = await manager.call_tool(specs["get-tiny-image"], {}, call_info("c3"))
    assert any(isinstance(b, ImageBlock) for b in image.content)
    weather = await manager.call_tool(specs["get-structured-content"], {"location": "Chicago"}, call_info("c4"))
    assert isinstance(weather.structured, dict) and "temperature" in weather.structured
    env = await manager.call_tool(specs["get-env"], {}, call_info("c5"))
    assert "OPENAI_API_KEY" not in _text(env)

    progress: list[tuple[float, float | None]] = []

    async def on_progress(value: float, total_: float | None, message: str | None) -> None:
        progress.append((value, total_))

    long = await manager.call_tool(
        specs["trigger-long-running-operation"], {"duration": 1, "steps": 4}, call_info("c6"), on_progress
    )
    assert not long.is_error and "completed" in _text(long)
    assert [p for p, _ in progress] == [1, 2, 3, 4] and all(t == 4 for _, t in progress)

    elicited = await manager.call_tool(specs["trigger-elicitation-request"], {}, call_info("c7"))
    assert not elicited.is_error
    (asked,) = asked_events
    assert asked.server == "everything" and asked.call_id == "c7" and asked.mode == "form"
    assert problems == [[]], problems  # our answer is valid for its schema
    text = _text(elicited)
    assert "accept" in text and "Ada Lovelace" in text and "ada@example.com" in text

    if "trigger-sampling-request" in specs:
        sampled = await manager.call_tool(specs["trigger-sampling-request"], {"prompt": "hi"}, call_info("c8"))
        assert sampled.is_error
        assert any("sample" in w.message for w in harness.of(WarningEvent))
    json.dumps([s.model_dump() for s in specs.values()])  # the catalogue is plain JSON
