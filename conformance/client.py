"""Harness for the MCP conformance suite's client scenarios: ``python conformance/client.py URL``.

Drives nbagent's own MCP client the way a person would: a ``Session`` connects to the scenario's
server, and a scripted (replay) model calls every tool that server lists, with arguments made
from each tool's schema. Elicitations are accepted with empty content, so the session's own
default-filling (SEP-1034) is what the scenario checks. A server that needs a sign-in announces
it with ``mcp_login_required``; the harness plays the person's browser by following that link
with an HTTP client, redirects included, to nbagent's loopback callback. What the suite hands
the client in ``MCP_CONFORMANCE_CONTEXT`` (a pre-registered client) becomes the server's
``oauth`` settings, as a person would write them in ``nbagent.toml``. Exit status 0 when the
turn completed. A test harness, so it lives beside the pinned suite, not in the package:
bench/conformance.py gives it to the suite as the client command.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

import httpx2

from nbagent.config import McpServerConfig
from nbagent.config.oauth import OAuthSettings
from nbagent.core.session import Session
from nbagent.mcp.elicitation import apply_defaults
from nbagent.protocol import ElicitationResponse, Event, ListMcpTools, McpListToolsResponse

SERVER = "conf"
CLIENT_METADATA_URL = "https://conformance-test.local/client-metadata.json"
"""The Client ID Metadata Document URL the suite's authorization servers expect (SEP-991)."""
SECRET_VAR = "NBAGENT_CONFORMANCE_CLIENT_SECRET"
STARTUP_TIMEOUT = 120
"""Generous: the suite runs its authorization scenarios side by side, and a login's discovery,
registration and token requests all count against startup on a machine they keep busy."""


def sample_arguments(schema: dict[str, Any]) -> dict[str, Any]:
    """Plausible arguments for a flat object schema (numbers 2, 3, ...; strings "test")."""
    out: dict[str, Any] = {}
    counter = 2
    for name, prop in (schema.get("properties") or {}).items():
        kind = prop.get("type")
        if "default" in prop:
            out[name] = prop["default"]
        elif prop.get("enum"):
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


def oauth_settings(context: dict[str, Any]) -> OAuthSettings:
    """The ``[mcp_servers.conf.oauth]`` a person would write for this scenario: the suite's CIMD
    URL always (used only where the authorization server supports it), and a pre-registered
    client when the context names one, its secret passed through the environment."""
    if "client_id" not in context:
        return OAuthSettings(client_metadata_url=CLIENT_METADATA_URL)
    secret = context.get("client_secret")
    if secret:
        os.environ[SECRET_VAR] = str(secret)
    return OAuthSettings(client_id=str(context["client_id"]), client_secret_env_var=SECRET_VAR if secret else None,
                         client_metadata_url=CLIENT_METADATA_URL)


def _server_config(url: str, context: dict[str, Any]) -> dict[str, McpServerConfig]:
    protocol = os.environ.get("NBAGENT_CONFORMANCE_PROTOCOL", "legacy")
    return {SERVER: McpServerConfig(url=url, protocol=protocol, default_tools_approval_mode="approve",
                                    startup_timeout_sec=STARTUP_TIMEOUT, tool_timeout_sec=20, oauth=oauth_settings(context))}


class Person:
    """Answers what a person would: accepts elicitations, follows sign-in links in a "browser"."""

    def __init__(self, session: Session) -> None:
        self.session = session
        self.logins: list[asyncio.Task[None]] = []

    def __call__(self, event: Event) -> None:
        msg = event.msg
        if msg.type == "elicitation_requested":
            # a person accepting the form as shown: its fields pre-filled with the server's defaults
            content = apply_defaults(msg.requested_schema or {}, {})
            self.session.submit(ElicitationResponse(request_id=msg.request_id, action="accept", content=content))
        elif msg.type == "mcp_login_required":
            print(f"login required: {msg.server}", file=sys.stderr)
            self.logins.append(asyncio.get_running_loop().create_task(self.follow(msg.url)))
        elif msg.type == "mcp_login_completed":
            print(f"login completed: {msg.server}", file=sys.stderr)
        elif msg.type == "tool_call_end":
            print(f"{msg.tool}: {msg.status}: {msg.output[:200]}", file=sys.stderr)
        elif msg.type in ("warning", "error", "turn_failed"):
            print(f"{msg.type}: {msg.message}", file=sys.stderr)  # type: ignore[union-attr]

    async def follow(self, url: str) -> None:
        """The browser: GET the authorization link and every redirect, ending at the callback."""
        try:
            async with httpx2.AsyncClient(follow_redirects=True, timeout=20) as browser:
                page = await browser.get(url)
            print(f"sign-in page: HTTP {page.status_code} at {page.url.host}:{page.url.port}", file=sys.stderr)
        except httpx2.HTTPError as exc:
            print(f"sign-in link failed: {exc!r}", file=sys.stderr)


async def run(url: str) -> int:
    cwd = tempfile.mkdtemp(prefix="nbagent-conformance-")
    try:
        return await _run(url, cwd)
    finally:
        shutil.rmtree(cwd, ignore_errors=True)


async def _run(url: str, cwd: str) -> int:
    """One scenario in a fresh home of its own, so scenarios run side by side share no tokens."""
    context = json.loads(os.environ.get("MCP_CONFORMANCE_CONTEXT") or "{}")
    script = Path(cwd) / "script.json"
    # The script is written once the tools are known: the model is named with the turn, so it is read then.
    session = Session(cwd=cwd, home=Path(cwd) / "home", policy="full-auto",
                      mcp_servers=_server_config(url, context), interactive=True, entry="cli")
    person = Person(session)
    session.subscribe(person)
    report: dict[str, Any] = {"scenario": os.environ.get("MCP_CONFORMANCE_SCENARIO")}
    try:
        async with session:
            listed = await session.perform(ListMcpTools())
            assert isinstance(listed, McpListToolsResponse)
            server = listed.servers[SERVER]
            report["server"] = server.state
            if server.state != "ready":  # a scenario may still pass: what it checks can be a refusal
                print(f"server {server.state}: {server.error}", file=sys.stderr)
                return 1
            specs = [spec for spec in listed.tools if spec.server == SERVER]
            calls = [{"name": s.name, "arguments": sample_arguments(s.input_schema or s.parameters)} for s in specs]
            responses: list[dict[str, Any]] = ([{"tool_calls": calls}] if calls else []) + [{"text": "done"}]
            script.write_text(json.dumps({"responses": responses}))
            result = await session.run("Call each tool of the conformance server once.", model=f"replay:{script}")
            report.update(tools=[c["name"] for c in calls], status=result.status)
            return 0 if result.ok else 1
    finally:
        for login in person.logins:
            login.cancel()
        print(json.dumps({**report, "logins": len(person.logins)}))


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if not args:
        print("usage: python conformance/client.py URL", file=sys.stderr)
        return 2
    return asyncio.run(run(args[-1]))


if __name__ == "__main__":
    sys.exit(main())
