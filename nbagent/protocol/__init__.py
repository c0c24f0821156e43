"""Wire and disk types of nbagent. A leaf: imports nothing else of nbagent."""

from nbagent.protocol._base import ProtocolModel, new_id, now
from nbagent.protocol.events import (
    AgentMessage,
    AgentMessageDelta,
    ApprovalRequested,
    ApprovalResolved,
    ElicitationRequested,
    ElicitationResolved,
    ErrorEvent,
    Event,
    EventAdapter,
    McpLog,
    McpStartupComplete,
    McpStartupUpdate,
    McpToolsChanged,
    Progress,
    Reasoning,
    ReasoningDelta,
    SessionConfigured,
    ShutdownComplete,
    TokenUsage,
    ToolCallBegin,
    ToolCallEnd,
    TurnAborted,
    TurnCompleted,
    TurnStarted,
    WarningEvent,
)
from nbagent.protocol.items import (
    ApprovalRecord,
    AssistantMessage,
    ElicitationRecord,
    FunctionCall,
    FunctionCallOutput,
    Item,
    ItemAdapter,
    ReasoningItem,
    UserMessage,
)
from nbagent.protocol.ops import (
    ApprovalDecision,
    Decision,
    ElicitationResponse,
    Entry,
    Interrupt,
    Op,
    OpAdapter,
    Policy,
    Shutdown,
    UserTurn,
)
from nbagent.protocol.rollout import ItemRecord, NameRecord, RolloutLine, RolloutLineAdapter, ThreadMeta, TurnRecord
from nbagent.protocol.tools import (
    ApprovalMode,
    CallInfo,
    ContentBlock,
    ImageBlock,
    ResourceBlock,
    TextBlock,
    ToolAnnotations,
    ToolResult,
    ToolSource,
    ToolSpec,
)

__all__ = [name for name in dir() if not name.startswith("_")]
