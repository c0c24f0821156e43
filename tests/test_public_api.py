"""The public surface front ends and scripts rely on (docs/contracts.md), pinned: an accidental
change to a name or a signature fails here, and the message says what changed. A deliberate
change updates the pinned value below and docs/contracts.md together."""

from __future__ import annotations

import inspect
import typing
from pathlib import Path
from typing import Any

import pytest

import nbagent
from nbagent import protocol
from nbagent.core.servers import McpServers
from nbagent.core.session import Session
from nbagent.core.thread import ThreadState

ALL = ["RunResult", "Session", "__version__", "load_ipython_extension", "unload_ipython_extension"]

SESSION = {
    "__init__": "(self, *, model: 'str | None' = None, policy: 'Policy | None' = None, cwd: 'str | Path | None' = None, home: 'str | Path | None' = None, thread: 'str | None' = None, thread_name: 'str | None' = None, config: 'Config | None' = None, mcp_servers: 'dict[str, McpServerConfig] | None' = None, interactive: 'bool' = False, entry: 'Entry' = 'python', notebook_path: 'str | None' = None) -> 'None'",
    "add_provider": "(self, provider: 'ToolProvider') -> 'None'",
    "call_tool": "(self, name: 'str', arguments: 'dict[str, Any]', *, policy: 'Policy | None' = None, entry: 'Entry' = 'notebook_server', interactive: 'bool | None' = None) -> 'FunctionCallOutput'",
    "compact": "(self, *, model: 'str | None' = None) -> 'ContextCompacted | None'",
    "current_turn_id": "property",
    "events": "(self) -> 'AsyncIterator[Event]'",
    "interrupt": "(self, reason: 'str' = 'interrupted', *, turn_id: 'str | None' = None) -> 'bool'",
    "model_client": "(self, model: 'str | None' = None) -> 'ModelClient'",
    "model_name": "property",
    "pending_approvals": "(self) -> 'dict[str, ApprovalRequested]'",
    "pending_elicitations": "(self) -> 'dict[str, ElicitationRequested]'",
    "policy": "property",
    "project_docs": "(self) -> 'ProjectDocs'",
    "set_turn_context": "(self, source: 'Callable[[], Awaitable[str | None]] | None') -> 'None'",
    "register_tool": "(self, fn: 'Callable[..., Any]', *, name: 'str | None' = None, description: 'str | None' = None, read_only: 'bool' = False, destructive: 'bool | None' = None, approval_mode: 'ApprovalMode' = 'auto') -> 'ToolSpec'",
    "run": "(self, prompt: 'str', *, entry: 'Entry | None' = None, model: 'str | None' = None, policy: 'Policy | None' = None, interactive: 'bool | None' = None) -> 'RunResult'",
    "run_sync": "(prompt: 'str', **kwargs: 'Any') -> 'RunResult'",
    "running": "property",
    "shutdown": "(self) -> 'None'",
    "start": "(self, op: 'UserTurn') -> 'asyncio.Future[RunResult]'",
    "submit": "(self, op: 'Op') -> 'str'",
    "subscribe": "(self, callback: 'Callable[[Event], None]') -> 'Callable[[], None]'",
    "tools": "(self, *, complete: 'bool' = False) -> 'list[ToolSpec]'",
    "warn": "(self, message: 'str') -> 'None'",
}
SESSION_FIELDS = ["approvals", "config", "cwd", "elicitations", "inspector", "interactive", "servers", "thread"]
"""Attributes set per session. ``approvals``/``elicitations`` are the core's desks, not surface."""

THREAD = {
    "close": "(self) -> 'None'",
    "find": "(self, id_or_name: 'str') -> 'str | None'",
    "for_provider": "(self, instructions: 'str', tools: 'list[ToolSpec]') -> 'tuple[str, list[ToolSpec]]'",
    "new": "(self, name: 'str | None' = None) -> 'str'",
    "record": "(self, item: 'Item') -> 'None'",
    "redactor": "(self) -> 'Redactor'",
    "refresh_secrets": "(self) -> 'None'",
    "rename": "(self, name: 'str') -> 'None'",
    "resume": "(self, id_or_name: 'str', adopt: 'Callable[[ThreadMeta], None] | None' = None) -> 'str'",
    "saved": "(self, limit: 'int | None' = 50) -> 'list[ThreadSummary]'",
    "stored": "property",
    "write": "(self, line: 'RolloutLine') -> 'RolloutLine'",
}
THREAD_FIELDS = ["call_ids", "context", "id", "items", "name"]

SERVERS = {
    "aclose": "(self) -> 'None'",
    "add": "(self, name: 'str', cfg: 'McpServerConfig') -> 'bool'",
    "names": "(self) -> 'list[str]'",
    "prompts": "(self, args: 'list[str]') -> 'str'",
    "ready": "(self) -> 'None'",
    "remove": "(self, name: 'str') -> 'None'",
    "resources": "(self, args: 'list[str]') -> 'str'",
    "restart": "(self, name: 'str') -> 'bool'",
    "start": "(self) -> 'None'",
    "status": "(self) -> 'dict[str, ServerStatus]'",
    "wire": "(self, name: 'str', last: 'int | None' = None) -> 'list[WireMessage]'",
}

OPS = {
    "ApprovalDecision": "approval_decision",
    "ElicitationResponse": "elicitation_response",
    "Interrupt": "interrupt",
    "Shutdown": "shutdown",
    "UserTurn": "user_turn",
}
USER_TURN_FIELDS = ["ask_timeout_sec", "entry", "interactive", "model", "policy", "prompt", "turn_id", "type"]

ANSWERED_BY = ["user", "policy", "remembered", "timeout", "unanswered", "interrupt"]
"""Who or what resolves an ask (``AnsweredBy``); a server's question is never ``remembered``."""

ENVELOPE_FIELDS = ["seq", "thread_id", "turn_id", "at", "msg"]

EVENTS = {
    "AgentMessage": "agent_message",
    "AgentMessageDelta": "agent_message_delta",
    "ApprovalRequested": "approval_requested",
    "ApprovalResolved": "approval_resolved",
    "ElicitationRequested": "elicitation_requested",
    "ElicitationResolved": "elicitation_resolved",
    "ErrorEvent": "error",
    "ExecCommandOutputDelta": "exec_command_output_delta",
    "McpLog": "mcp_log",
    "McpLoginCompleted": "mcp_login_completed",
    "McpLoginRequired": "mcp_login_required",
    "McpStartupComplete": "mcp_startup_complete",
    "McpStartupUpdate": "mcp_startup_update",
    "McpToolsChanged": "mcp_tools_changed",
    "PatchApplyBegin": "patch_apply_begin",
    "PatchApplyEnd": "patch_apply_end",
    "Progress": "progress",
    "Reasoning": "reasoning",
    "ReasoningDelta": "reasoning_delta",
    "SessionConfigured": "session_configured",
    "ShutdownComplete": "shutdown_complete",
    "TokenUsage": "token_usage",
    "ContextCompacted": "context_compacted",
    "ToolCallBegin": "tool_call_begin",
    "ToolCallEnd": "tool_call_end",
    "TurnAborted": "turn_aborted",
    "TurnCompleted": "turn_completed",
    "TurnFailed": "turn_failed",
    "TurnStarted": "turn_started",
    "WarningEvent": "warning",
}


def surface(cls: type, *, init: bool) -> dict[str, str]:
    """Public name -> its signature (or "property") for every public member of ``cls``; with
    ``init``, its constructor too (front ends build a ``Session``, never its parts)."""
    out: dict[str, str] = {}
    for name, member in inspect.getmembers(cls):
        if name.startswith("_") and not (init and name == "__init__"):
            continue
        raw = inspect.getattr_static(cls, name)
        if isinstance(raw, property):
            out[name] = "property (settable)" if raw.fset else "property"
        elif callable(member):
            out[name] = str(inspect.signature(member))
    return out


def diff(kind: str, pinned: dict[str, str], now: dict[str, str]) -> list[str]:
    """What changed, one line each, so the failure says it without a second look."""
    lines = [f"{kind}.{n} was removed (pinned {pinned[n]})" for n in sorted(pinned.keys() - now.keys())]
    lines += [f"{kind}.{n} was added: {now[n]}" for n in sorted(now.keys() - pinned.keys())]
    lines += [
        f"{kind}.{n} changed:\n  pinned {pinned[n]}\n  now    {now[n]}"
        for n in sorted(pinned.keys() & now.keys())
        if pinned[n] != now[n]
    ]
    return lines


def fields(obj: object) -> list[str]:
    return sorted(n for n in vars(obj) if not n.startswith("_"))


def members(union: Any) -> dict[str, str]:
    """Class name -> ``type`` tag of every model in a discriminated union."""
    (models, *_) = typing.get_args(union)
    return {m.__name__: m.model_fields["type"].default for m in typing.get_args(models)}


def test_the_package_exports_what_it_did() -> None:
    assert sorted(nbagent.__all__) == sorted(ALL), f"nbagent.__all__ changed: {sorted(nbagent.__all__)} (pinned {ALL})"
    for name in nbagent.__all__:
        assert getattr(nbagent, name) is not None, f"nbagent.{name} is in __all__ but does not resolve"


@pytest.mark.parametrize(
    ("kind", "cls", "pinned"), [("Session", Session, SESSION), ("ThreadState", ThreadState, THREAD), ("McpServers", McpServers, SERVERS)]
)
def test_public_methods_and_signatures_are_pinned(kind: str, cls: type, pinned: dict[str, str]) -> None:
    changes = diff(kind, pinned, surface(cls, init=cls is Session))
    assert not changes, "the public surface changed (update tests/test_public_api.py and docs/contracts.md):\n" + "\n".join(changes)


async def test_a_session_sets_only_the_pinned_public_attributes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("NBAGENT_MODEL", raising=False)
    async with Session(home=tmp_path / "home", cwd=tmp_path) as session:
        assert fields(session) == SESSION_FIELDS, f"Session attributes are now {fields(session)} (pinned {SESSION_FIELDS})"
        assert fields(session.thread) == THREAD_FIELDS, (
            f"ThreadState attributes are now {fields(session.thread)} (pinned {THREAD_FIELDS})"
        )
        assert isinstance(session.thread, ThreadState) and isinstance(session.servers, McpServers)


def test_the_op_and_event_types_are_pinned() -> None:
    changes = diff("Op", OPS, members(protocol.Op)) + diff("Event", EVENTS, members(protocol.EventMsg))
    assert not changes, "the protocol's types changed (update tests/test_public_api.py):\n" + "\n".join(changes)
    envelope = list(protocol.Event.model_fields)
    assert envelope == ENVELOPE_FIELDS, f"the event envelope's fields are now {envelope} (pinned {ENVELOPE_FIELDS})"
    missing = [n for n in [*OPS, *EVENTS, "Event", "EventMsg"] if n not in protocol.__all__]
    assert not missing, f"nbagent.protocol no longer exports {missing}"
    user_turn = sorted(protocol.UserTurn.model_fields)
    assert user_turn == USER_TURN_FIELDS, f"UserTurn's fields are now {user_turn} (pinned {USER_TURN_FIELDS})"


def test_who_resolves_an_ask_is_pinned() -> None:
    by = {
        "AnsweredBy": list(typing.get_args(protocol.AnsweredBy)),
        "approval_resolved.by": list(typing.get_args(protocol.ApprovalResolved.model_fields["by"].annotation)),
        "elicitation_resolved.by": list(typing.get_args(protocol.ElicitationResolved.model_fields["by"].annotation)),
    }
    pinned = [ANSWERED_BY, ANSWERED_BY, [b for b in ANSWERED_BY if b != "remembered"]]
    changed = [f"{name} is now {now}" for (name, now), want in zip(by.items(), pinned, strict=True) if now != want]
    assert not changed, f"who resolves an ask changed (pinned {ANSWERED_BY}):\n" + "\n".join(changed)
