"""Model clients behind one small interface (``ModelClient``); ``make_model`` picks one."""

from nbagent.models.base import (
    Completed,
    ModelClient,
    ModelError,
    ModelErrorCode,
    ModelEvent,
    ModelRequest,
    ReasoningDone,
    ReasoningSummaryDelta,
    TextDelta,
    ToolCallDone,
    Usage,
)
from nbagent.models.factory import make_model

__all__ = [
    "Completed",
    "ModelClient",
    "ModelError",
    "ModelErrorCode",
    "ModelEvent",
    "ModelRequest",
    "ReasoningDone",
    "ReasoningSummaryDelta",
    "TextDelta",
    "ToolCallDone",
    "Usage",
    "make_model",
]
