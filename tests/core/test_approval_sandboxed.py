"""Codex's approval rule for a tool that runs each call in the sandbox (``shell``), as a table:
inside the sandbox nothing asks but ``untrusted``; a call that asks to leave it always asks, a
remembered approval notwithstanding, except under ``full-auto`` (DESIGN §5)."""

from __future__ import annotations

import itertools

import pytest

from nbagent.core.approval import ask_reason, escalation
from nbagent.protocol import Policy, ToolAnnotations, ToolSpec

POLICIES: list[Policy] = ["untrusted", "on-request", "never", "full-auto"]
ASKS = {
    # (policy, escalated, remembered) -> asks
    ("untrusted", False, False): True,
    ("untrusted", False, True): False,
    ("on-request", False, False): False,
    ("on-request", False, True): False,
    ("never", False, False): False,
    ("never", False, True): False,
    ("full-auto", False, False): False,
    ("full-auto", False, True): False,
    ("untrusted", True, False): True,
    ("untrusted", True, True): True,
    ("on-request", True, False): True,
    ("on-request", True, True): True,
    ("never", True, False): True,  # asked under ``never`` means declined
    ("never", True, True): True,
    ("full-auto", True, False): False,
    ("full-auto", True, True): False,
}
SHELL = ToolSpec(
    name="shell", raw_name="shell", source="native", trusted=True, sandboxed=True,
    annotations=ToolAnnotations(read_only_hint=False, destructive_hint=True),
)  # fmt: skip


@pytest.mark.parametrize(("policy", "escalated", "remembered"), list(itertools.product(POLICIES, [False, True], [False, True])))
def test_the_table_for_a_sandboxed_tool(policy: Policy, escalated: bool, remembered: bool) -> None:
    arguments = {"command": ["ls"], "with_escalated_permissions": escalated, "justification": "needs the net"}
    reason = ask_reason(SHELL, policy, remembered, escalated=escalation(SHELL, arguments))
    assert (reason is not None) == ASKS[(policy, escalated, remembered)], reason
    if escalated and reason is not None:
        assert reason == "it asks to run outside the sandbox: needs the net"


def test_escalation_counts_only_for_a_sandboxed_tool_and_only_when_true() -> None:
    unsandboxed = SHELL.model_copy(update={"sandboxed": False})
    assert escalation(unsandboxed, {"with_escalated_permissions": True}) is None
    assert escalation(SHELL, {"with_escalated_permissions": "yes"}) is None
    assert escalation(SHELL, {"with_escalated_permissions": True}) == ""
    # outside the sandbox (danger-full-access) the ordinary rule: a destructive tool asks
    assert ask_reason(unsandboxed, "on-request", False) == "the tool says it is destructive"
