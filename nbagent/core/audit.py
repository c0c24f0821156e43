"""The audit trail: the session's own events, as an administrator reads them.

Subscribed to the session's bus, ``AuditTrail`` turns each decision about a tool call, each
call's end, each answer to a server's question and each sign-in into one line of the user's
audit log (``nbagent.store.audit``), under Codex's OpenTelemetry event names where Codex has
one (``codex.tool_decision``, ``codex.tool_result``). A line names who and what (the OS user by
uid, the thread, turn, tool identity and definition hash, the policy, who decided) and never a
value: no arguments, no output, no answer's content (only its field names), so no secret.
"""

from __future__ import annotations

import logging
import os
import pwd
import time
from collections.abc import Callable
from typing import Any

from nbagent.config import Config
from nbagent.config.requirements import audit_folder
from nbagent.protocol import (
    ApprovalRequested,
    ApprovalResolved,
    ElicitationRequested,
    ElicitationResolved,
    Event,
    McpLoginCompleted,
    SandboxDenied,
    ToolCallBegin,
    ToolCallEnd,
    ToolSpec,
    TurnStarted,
)
from nbagent.store.audit import AuditLog

log = logging.getLogger(__name__)

TOOL_DECISION = "codex.tool_decision"
TOOL_RESULT = "codex.tool_result"
ELICITATION = "nbagent.elicitation_answer"
LOGIN = "nbagent.mcp_login"
LOGOUT = "nbagent.mcp_logout"
SANDBOX_DENIAL = "nbagent.sandbox_denial"


def os_user() -> str:
    """The user by uid, not by ``$USER`` (which anyone can set)."""
    try:
        return pwd.getpwuid(os.getuid()).pw_name
    except KeyError:
        return str(os.getuid())


def audit_log(config: Config) -> AuditLog:
    """The running user's audit log, where ``config``'s requirements put it."""
    return AuditLog(audit_folder(config.requirements, config.home_path, os_user()))


def record_outside(config: Config, name: str, **fields: Any) -> None:
    """One line for what is done outside any session (``nbagent mcp login``); a log that cannot
    be written is logged, as a session's is."""
    at = time.time()
    try:
        audit_log(config).write({"event": name, "at": at, "user": os_user(), "uid": os.getuid(), **fields}, at)
    except OSError as exc:
        log.warning("audit log: cannot write: %s", exc)


class AuditTrail:
    """A watcher of the session's events as made (``EventBus.watch``): a line holds names, ids and
    decisions, and the two texts it keeps (an ask's reason, what a sandbox denied) pass through
    ``redact``, so no event is redacted whole for the log's sake."""

    def __init__(
        self, log_: AuditLog, *, spec_of: Callable[[str], ToolSpec | None], policy: Callable[[], str],
        redact: Callable[[str], str],
    ) -> None:
        self._log = log_
        self._redact = redact
        self._spec_of = spec_of
        """The catalogue's tool by model-visible name (its definition hash), when it has one."""
        self._policy = policy
        """The session's policy, for a call outside any turn the trail saw start."""
        self._who = {"user": os_user(), "uid": os.getuid()}
        self._turn_policy: dict[str, str] = {}
        self._calls: dict[str, dict[str, Any]] = {}
        self._asked: set[str] = set()
        self._questions: dict[str, str] = {}
        self._failed = False

    def __call__(self, event: Event) -> None:
        msg = event.msg
        if isinstance(msg, TurnStarted) and event.turn_id:
            self._turn_policy[event.turn_id] = msg.policy
        elif isinstance(msg, ToolCallBegin):
            spec = self._spec_of(msg.tool)
            self._calls[msg.call_id] = {
                "tool": msg.tool, "server": msg.server, "raw_tool": msg.raw_tool,
                "definition_hash": spec.definition_hash if spec is not None and spec.definition_hash else None,
                "parsed": msg.arguments is not None,
            }
        elif isinstance(msg, ApprovalRequested):
            self._asked.add(msg.call_id)
            self._calls.setdefault(msg.call_id, {"tool": msg.tool, "server": msg.server, "raw_tool": msg.raw_tool})
            self._calls[msg.call_id]["reason"] = self._redact(msg.reason)
        elif isinstance(msg, ApprovalResolved):
            self._append([self._decision(event, msg.call_id, self._calls.get(msg.call_id, {}), msg.decision, msg.by)],
                         event.at)
        elif isinstance(msg, ToolCallEnd):
            self._ended(event, msg)
        elif isinstance(msg, ElicitationRequested):
            self._questions[msg.request_id] = msg.server
        elif isinstance(msg, ElicitationResolved):
            fields = sorted(self._redact(key) for key in msg.content) if msg.content else []
            self._write(event, ELICITATION, server=self._questions.pop(msg.request_id, None), action=msg.action,
                        by=msg.by, fields=fields)
        elif isinstance(msg, McpLoginCompleted):
            self._write(event, LOGIN, server=msg.server, outcome="completed")
        elif isinstance(msg, SandboxDenied):
            self._write(event, SANDBOX_DENIAL, call_id=msg.call_id, **_identity(self._calls.get(msg.call_id, {"tool": msg.tool})),
                        sandbox=msg.sandbox, denied=self._redact(msg.denied))

    def _decision(self, event: Event, call_id: str, call: dict[str, Any], decision: str, by: str) -> dict[str, Any]:
        return self._record(event, TOOL_DECISION, self._policy_of(event), call_id=call_id, decision=decision, by=by,
                            **_identity(call), reason=call.get("reason"))

    def _ended(self, event: Event, msg: ToolCallEnd) -> None:
        """The call's result line, after the line of the policy's approval when it ran unasked.
        Both are made from one head (every call ends with them: no record is merged twice)."""
        call = self._calls.pop(msg.call_id, None) or {"tool": msg.tool}
        asked = msg.call_id in self._asked
        if asked:
            self._asked.discard(msg.call_id)
        identity = _identity(call)
        head = self._record(event, TOOL_RESULT, self._policy_of(event), call_id=msg.call_id)
        result = {**head, **identity, "status": msg.status, "success": msg.status == "completed" and not msg.is_error,
                  "duration_ms": round(msg.duration_ms, 3)}
        if not asked and call.get("parsed") and identity["definition_hash"] is not None and msg.status != "denied":
            # ran with no ask: the policy and the tool's approval mode let it
            head["event"] = TOOL_DECISION
            self._append([{**head, "decision": "approve", "by": "policy", **identity, "reason": call.get("reason")}, result],
                         event.at)
        else:
            self._append([result], event.at)

    def _write(self, event: Event, name: str, **fields: Any) -> None:
        self._append([self._record(event, name, self._policy_of(event), **fields)], event.at)

    def _policy_of(self, event: Event) -> str:
        return self._turn_policy.get(event.turn_id or "") or self._policy()

    def _record(self, event: Event, name: str, policy: str, **fields: Any) -> dict[str, Any]:
        return {"event": name, "at": event.at, **self._who, "thread_id": event.thread_id,
                "turn_id": event.turn_id, "policy": policy, **fields}

    def _append(self, records: list[dict[str, Any]], at: float) -> None:
        try:
            self._log.write_many(records, at)
        except OSError as exc:  # the session goes on; the log says once that its trail has a gap
            if not self._failed:
                log.warning("audit log %s: cannot write: %s", self._log.folder, exc)
            self._failed = True


def _identity(call: dict[str, Any]) -> dict[str, Any]:
    get = call.get
    return {"tool": get("tool"), "server": get("server"), "raw_tool": get("raw_tool"),
            "definition_hash": get("definition_hash")}
