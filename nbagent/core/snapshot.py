"""``SessionSnapshot``: what a front end reads of a session, as one read-only value.

Front ends poll a session between events (``%agent status``, the serving panel, the MCP
server's open asks); each such read is a field here, taken at one moment, so nothing a front
end holds can change the session or change under it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import TypeVar

from nbagent.config import McpServerConfig
from nbagent.config.project_docs import ProjectDocs
from nbagent.core.approval import RawIdentity, identity
from nbagent.protocol import ApprovalRequested, ElicitationRequested, Item, Policy, ServerStatus, TokenUsage, ToolSpec
from nbagent.secrets import Redactor

V = TypeVar("V")


@dataclass(frozen=True)
class SessionSnapshot:
    thread_id: str
    thread_name: str | None
    thread_stored: bool
    """Whether the thread has a rollout on disk yet (a new thread has one from its first turn)."""
    items: tuple[Item, ...]
    call_ids: frozenset[str]
    """The thread's tool calls, for telling a cell the agent ran from one a person ran."""
    context_tokens: int
    """What the thread's context costs the model now, estimated."""
    context_window: int | None
    context_limit: int | None
    """Past this many tokens the thread is compacted before the next request."""
    thread_usage: TokenUsage
    """What the thread's model requests cost, resumed turns included (the day's: ``day_usage``)."""
    policy: Policy
    model_name: str
    cwd: str
    interactive: bool
    running: bool
    current_turn_id: str | None
    queued: frozenset[str]
    """Turns submitted that have not started yet."""
    servers: Mapping[str, ServerStatus]
    """Each configured MCP server's status, in configuration order."""
    pending_approvals: Mapping[str, ApprovalRequested]
    pending_elicitations: Mapping[str, ElicitationRequested]
    tools: tuple[ToolSpec, ...]
    """The catalogue as the model sees it (a deferred tool's schema is made when first used)."""
    home: Path
    instructions: str | None
    """The config's own ``instructions``."""
    project_docs: ProjectDocs
    """The ``AGENTS.md`` files that apply here, read now (a turn reads them as it starts)."""
    tool_output_max_bytes: int
    max_model_tools: int
    mcp_servers: Mapping[str, McpServerConfig]
    """The MCP servers the session is configured with (added and removed ones included)."""
    approved: frozenset[tuple[RawIdentity, str]]
    """The tools approved for the rest of this session ("approve for this session"), each by
    its identity and the definition approved; ``knows`` says whether one still holds."""
    redactor: Redactor
    """The thread's rollout redactor: items, asks and names here are as the session holds them,
    so a front end shows them through this, hiding what the rollout and the events hide."""


    def knows(self, spec: ToolSpec) -> bool:
        """Whether ``spec``, as defined now, runs without asking again this session."""
        return (identity(spec), spec.definition_hash) in self.approved


def frozen_map(values: Mapping[str, V]) -> Mapping[str, V]:
    """A read-only copy."""
    return MappingProxyType(dict(values))
