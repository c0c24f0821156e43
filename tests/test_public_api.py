"""The public surface front ends and scripts rely on (docs/contracts.md), pinned: an accidental
change to a name or a signature fails here, and the message says what changed. A deliberate
change updates the pinned value below and docs/contracts.md together."""

from __future__ import annotations

import dataclasses
import inspect
import re
import typing
from pathlib import Path
from typing import Any

import pytest

import nbagent
from nbagent import protocol
from nbagent.core.session import Session
from nbagent.core.snapshot import SessionSnapshot

ALL = ["RunResult", "Session", "__version__", "load_ipython_extension", "unload_ipython_extension"]

SESSION = {
    "__init__": "(self, *, model: 'str | None' = None, policy: 'Policy | None' = None, cwd: 'str | Path | None' = None, home: 'str | Path | None' = None, thread: 'str | None' = None, thread_name: 'str | None' = None, config: 'Config | None' = None, mcp_servers: 'dict[str, McpServerConfig] | None' = None, interactive: 'bool' = False, entry: 'Entry' = 'python', notebook_path: 'str | None' = None) -> 'None'",
    "add_provider": "(self, provider: 'ToolProvider') -> 'None'",
    "events": "(self) -> 'AsyncIterator[Event]'",
    "model_client": "(self, model: 'str | None' = None) -> 'ModelClient'",
    "perform": "(self, op: 'Op') -> 'EventMsg'",
    "register_tool": "(self, fn: 'Callable[..., Any]', *, name: 'str | None' = None, description: 'str | None' = None, read_only: 'bool' = False, destructive: 'bool | None' = None, approval_mode: 'ApprovalMode' = 'auto') -> 'ToolSpec'",
    "run": "(self, prompt: 'str', *, entry: 'Entry | None' = None, model: 'str | None' = None, policy: 'Policy | None' = None, interactive: 'bool | None' = None, ask_timeout_sec: 'float | None' = None) -> 'RunResult'",
    "run_sync": "(prompt: 'str', **kwargs: 'Any') -> 'RunResult'",
    "set_turn_context": "(self, source: 'Callable[[], Awaitable[str | None]] | None') -> 'None'",
    "shutdown": "(self) -> 'None'",
    "snapshot": "(self) -> 'SessionSnapshot'",
    "submit": "(self, op: 'Op') -> 'str'",
    "subscribe": "(self, callback: 'Callable[[Event], None]') -> 'Callable[[], None]'",
}
SESSION_FIELDS: list[str] = []
"""A session sets no public attribute: front ends read ``snapshot()``."""

SNAPSHOT_FIELDS = ["thread_id", "thread_name", "thread_stored", "items", "call_ids", "context_tokens", "context_window", "context_limit", "thread_usage", "policy", "model_name", "cwd", "interactive", "running", "current_turn_id", "queued", "servers", "pending_approvals", "pending_elicitations", "tools", "home", "instructions", "project_docs", "tool_output_max_bytes", "max_model_tools", "mcp_servers", "approved", "redactor"]
"""What ``Session.snapshot()`` holds, in order."""

OPS = {
    "AddMcpServer": "add_mcp_server",
    "ApprovalDecision": "approval_decision",
    "AskUnanswered": "ask_unanswered",
    "CallTool": "call_tool",
    "Compact": "compact",
    "ElicitationResponse": "elicitation_response",
    "Inspect": "inspect",
    "Interrupt": "interrupt",
    "ListMcpTools": "list_mcp_tools",
    "ListThreads": "list_threads",
    "NewThread": "new_thread",
    "OverrideTurnContext": "override_turn_context",
    "ReadMcpOffers": "read_mcp_offers",
    "RemoveMcpServer": "remove_mcp_server",
    "RenameThread": "rename_thread",
    "RestartMcpServer": "restart_mcp_server",
    "ResumeThread": "resume_thread",
    "Shutdown": "shutdown",
    "Undo": "undo",
    "UserTurn": "user_turn",
}
USER_TURN_FIELDS = ["ask_timeout_sec", "entry", "interactive", "model", "policy", "prompt", "turn_id", "type"]

ANSWERED_BY = ["user", "code", "policy", "remembered", "timeout", "unanswered", "interrupt"]
"""Who or what resolves an ask (``AnsweredBy``); a server's question is never ``remembered``."""

ENVELOPE_FIELDS = ["seq", "thread_id", "turn_id", "at", "msg"]

EVENTS = {
    "AgentMessage": "agent_message",
    "AgentMessageDelta": "agent_message_delta",
    "ApprovalRequested": "approval_requested",
    "ApprovalResolved": "approval_resolved",
    "ContextCompacted": "context_compacted",
    "ElicitationRequested": "elicitation_requested",
    "ElicitationResolved": "elicitation_resolved",
    "ErrorEvent": "error",
    "ExecCommandOutputDelta": "exec_command_output_delta",
    "SandboxDenied": "sandbox_denied",
    "InspectResult": "inspect_result",
    "McpListToolsResponse": "mcp_list_tools_response",
    "McpLog": "mcp_log",
    "McpLoginCompleted": "mcp_login_completed",
    "McpLoginRequired": "mcp_login_required",
    "McpOffers": "mcp_offers",
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
    "ThreadList": "thread_list",
    "ThreadRenamed": "thread_renamed",
    "TokenCount": "token_count",
    "ToolCallBegin": "tool_call_begin",
    "ToolCallEnd": "tool_call_end",
    "TurnAborted": "turn_aborted",
    "TurnCompleted": "turn_completed",
    "TurnFailed": "turn_failed",
    "TurnStarted": "turn_started",
    "UndoCompleted": "undo_completed",
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


def test_public_methods_and_signatures_are_pinned() -> None:
    changes = diff("Session", SESSION, surface(Session, init=True))
    assert not changes, "the public surface changed (update tests/test_public_api.py and docs/contracts.md):\n" + "\n".join(changes)


async def test_a_session_sets_no_public_attribute_and_its_snapshot_is_pinned(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("NBAGENT_MODEL", raising=False)
    async with Session(home=tmp_path / "home", cwd=tmp_path) as session:
        assert fields(session) == SESSION_FIELDS, f"Session attributes are now {fields(session)} (pinned {SESSION_FIELDS})"
        now = session.snapshot()
    snapshot = [f.name for f in dataclasses.fields(SessionSnapshot)]
    assert snapshot == SNAPSHOT_FIELDS, f"SessionSnapshot's fields are now {snapshot} (pinned {SNAPSHOT_FIELDS})"
    with pytest.raises(dataclasses.FrozenInstanceError):
        now.policy = "full-auto"  # type: ignore[misc]  # read-only: a front end cannot change the session through it
    with pytest.raises(TypeError):
        now.servers["x"] = now.servers.get("x")  # type: ignore[index]  # its mappings are read-only too


PRIVATE_REACH = re.compile(
    r"\bsession\._[a-z]\w*|\b(?:s|sess)\._(?:thread|servers|inspector|approvals|elicitations|config|cwd|interactive"
    r"|tools|interrupt|start|warn|running|current_turn_id)\b"
)


def test_no_module_outside_the_core_reaches_a_private_session_attribute() -> None:
    """Front ends, the kit, the tools and the examples use the pinned names only; the core's parts
    stay the core's."""
    root = Path(nbagent.__file__).parent
    reached = [
        f"{path.relative_to(root.parent)}:{n}: {line.strip()}"
        for path in sorted(root.rglob("*.py")) if path.relative_to(root).parts[0] != "core"
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1) if PRIVATE_REACH.search(line)
    ]
    assert not reached, "modules outside nbagent/core reach a private Session attribute:\n" + "\n".join(reached)


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
