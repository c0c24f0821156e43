"""History items: the facts of a thread, in the order they happened.

A model request is a projection of these; the rollout stores them verbatim.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field, TypeAdapter

from nbagent.protocol._base import ProtocolModel, new_id, now
from nbagent.protocol.tools import ContentBlock


class _Item(ProtocolModel):
    id: str = Field(default_factory=lambda: new_id("item"))
    turn_id: str | None = None
    created_at: float = Field(default_factory=now)


class UserMessage(_Item):
    type: Literal["user_message"] = "user_message"
    text: str


class AssistantMessage(_Item):
    type: Literal["assistant_message"] = "assistant_message"
    text: str


class ReasoningItem(_Item):
    type: Literal["reasoning"] = "reasoning"
    summary: str
    encrypted_content: str | None = None


class FunctionCall(_Item):
    """A tool call as the model made it. ``arguments`` is the raw JSON string the model sent."""

    type: Literal["function_call"] = "function_call"
    call_id: str
    name: str
    """Model-visible tool name."""
    arguments: str
    server: str | None = None
    raw_tool: str | None = None


class FunctionCallOutput(_Item):
    """The output of one call, as the model sees it (truncated), plus display blocks."""

    type: Literal["function_call_output"] = "function_call_output"
    call_id: str
    output: str
    is_error: bool = False
    status: Literal["completed", "failed", "denied", "aborted"] = "completed"
    content: list[ContentBlock] = Field(default_factory=list)
    """Full blocks (images, resources) up to the rollout cap, for redrawing a card."""
    structured: Any | None = None
    duration_ms: float | None = None
    undo: dict[str, Any] | None = None
    """What undoing the call needs, never sent to the model or shown (``ToolResult.undo``)."""


class ApprovalRecord(_Item):
    """A recorded decision: no call that needed approval runs without one."""

    type: Literal["approval"] = "approval"
    call_id: str
    tool: str
    server: str | None = None
    raw_tool: str | None = None
    decision: str
    by: str
    message: str | None = None
    arguments: dict[str, Any] | None = None


class ElicitationRecord(_Item):
    type: Literal["elicitation"] = "elicitation"
    request_id: str
    server: str
    action: str
    by: str
    content: dict[str, Any] | None = None
    message: str | None = None


class CompactionItem(_Item):
    """The model's view of the thread was shortened here. The items it stands for stay in the
    rollout verbatim; the view (``core/context.py``) is a function of the items, so a resumed
    thread sends what it sent before."""

    type: Literal["compaction"] = "compaction"
    summary: str | None = None
    """When set, the model sees this instead of the thread's first ``replaced`` items."""
    replaced: int = 0
    shortened: list[str] = Field(default_factory=list)
    """Call ids whose outputs the model now sees as a stub naming what was dropped."""
    tokens_before: int = 0
    tokens_after: int = 0


class FileChange(ProtocolModel):
    """One workspace file a turn changed: its content before and after, as git blob ids
    (``None``: the file did not exist)."""

    path: str
    """Relative to the snapshot's work tree, ``/``-separated."""
    before: str | None = None
    after: str | None = None
    mode: str | None = None
    """The git mode it had before (``100755``: executable, ``120000``: a symlink)."""


class GhostSnapshot(_Item):
    """What a turn changed in the workspace, and where its before-versions are kept: Codex's
    ghost commit, a snapshot commit under a private ref that touches no branch, index or stash
    (of the workspace's own repository, or of a private one beside the thread)."""

    type: Literal["ghost_snapshot"] = "ghost_snapshot"
    git_dir: str
    work_tree: str
    commit: str
    """The snapshot taken before the turn's first change (it holds every file's before-version)."""
    ref: str
    changes: list[FileChange] = Field(default_factory=list)
    not_saved: list[str] = Field(default_factory=list)
    """Files left out of the snapshot (too large and untracked): undo cannot restore them."""


class UndoItem(_Item):
    """A turn undone: the files it changed are as they were before it. The model reads ``text``."""

    type: Literal["undo"] = "undo"
    undone_turn_id: str
    restored: list[str] = Field(default_factory=list)
    overwritten: list[str] = Field(default_factory=list)
    """Files changed after the turn that the undo overwrote because it was told to (``--force``)."""
    cells: list[str] = Field(default_factory=list)
    """The live notebook's cells the undo restored (through the front end), one line each."""
    call_id: str | None = None
    """Set when only this call of the turn was undone (one cell); unset: the whole turn."""
    text: str


Item = Annotated[
    UserMessage | AssistantMessage | ReasoningItem | FunctionCall | FunctionCallOutput | ApprovalRecord
    | ElicitationRecord | CompactionItem | GhostSnapshot | UndoItem,
    Field(discriminator="type"),
]
ItemAdapter: TypeAdapter[Item] = TypeAdapter(Item)
