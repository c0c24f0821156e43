"""Harness for the MCP conformance suite's client scenarios: ``python conformance/client.py URL``.

Drives nbagent's own MCP client the way a user would: a ``Session`` connects to the scenario's
server, and a scripted (replay) model calls every tool that server lists, with arguments made
from each tool's schema. Elicitations are accepted with empty content, so the session's own
default-filling (SEP-1034) is what the scenario checks. Exit status 0 when the turn completed.
A test harness, so it lives beside the pinned suite, not in the package: bench/conformance.py
gives it to the suite as the client command.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

from nbagent.config import McpServerConfig
from nbagent.core.session import Session
from nbagent.protocol import ElicitationResponse, Event, ToolSpec

SERVER = "conf"


def sample_arguments(schema: dict[str, Any]) -> dict[str, Any]:
    """Plausible arguments for a flat object schema (numbers 2, 3, ...; strings "test")."""
    out: dict[str, Any] = {}
    counter = 2
    for name, prop in (schema.get("properties") or {}).items():
        kind = prop.get("type")
        if "default" in prop:
            out[name] = prop["default"]
        elif "enum" in prop and prop["enum"]:
            out[name] = prop["enum"][0]
        elif kind in ("integer", "number"):
            out[name] = counter
            counter += 1
        elif kind == "boolean":
            out[name] = True
        elif kind == "array":
            out[name] = []
        elif kind == "object":
            out[name] = {}
        else:
            out[name] = "test"
    return out


def _server_config(url: str) -> dict[str, McpServerConfig]:
    protocol = os.environ.get("NBAGENT_CONFORMANCE_PROTOCOL", "legacy")
    return {SERVER: McpServerConfig(url=url, protocol=protocol, default_tools_approval_mode="approve",
                                    startup_timeout_sec=20, tool_timeout_sec=20)}


async def list_specs(url: str, cwd: str) -> list[ToolSpec]:
    async with Session(cwd=cwd, mcp_servers=_server_config(url), policy="full-auto") as session:
        await session.servers.ready()
        return [spec for spec in session.tools() if spec.server == SERVER]


async def run(url: str) -> int:
    cwd = tempfile.mkdtemp(prefix="nbagent-conformance-")
    os.environ.setdefault("NBAGENT_HOME", str(Path(cwd) / "home"))
    specs = await list_specs(url, cwd)
    calls = [{"name": s.name, "arguments": sample_arguments(s.input_schema or s.parameters)} for s in specs]
    script = Path(cwd) / "script.json"
    responses: list[dict[str, Any]] = ([{"tool_calls": calls}] if calls else []) + [{"text": "done"}]
    script.write_text(json.dumps({"responses": responses}))
    async with Session(model=f"replay:{script}", cwd=cwd, mcp_servers=_server_config(url), policy="full-auto",
                       interactive=True, entry="cli") as session:

        def answer(event: Event) -> None:
            msg = event.msg
            if msg.type == "elicitation_requested":
                session.submit(ElicitationResponse(request_id=msg.request_id, action="accept", content={}))
            elif msg.type == "tool_call_end":
                print(f"{msg.tool}: {msg.status}: {msg.output[:200]}", file=sys.stderr)
            elif msg.type in ("warning", "error", "turn_failed"):
                print(f"{msg.type}: {msg.message}", file=sys.stderr)  # type: ignore[union-attr]

        session.subscribe(answer)
        result = await session.run("Call each tool of the conformance server once.")
    print(json.dumps({"scenario": os.environ.get("MCP_CONFORMANCE_SCENARIO"), "tools": [c["name"] for c in calls],
                      "status": result.status}))
    return 0 if result.ok else 1


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if not args:
        print("usage: python conformance/client.py URL", file=sys.stderr)
        return 2
    return asyncio.run(run(args[-1]))


if __name__ == "__main__":
    sys.exit(main())
