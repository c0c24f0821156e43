"""The two tools nbagent serves, their argument models and their declared schemas."""

from __future__ import annotations

from typing import Any

import mcp_types as types
from pydantic import BaseModel, ConfigDict, Field

from nbagent.protocol import Policy


class AgentArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")

    prompt: str = Field(description="What the agent should do, in words.")
    model: str | None = Field(default=None, description="Model name, e.g. gpt-5.1 or replay:PATH.")
    policy: Policy | None = Field(default=None, description="Approval policy for this thread.")
    cwd: str | None = Field(default=None, description="Working directory of the session.")
    thread_name: str | None = Field(default=None, description="A name to find the thread by later.")
    config: dict[str, Any] | None = Field(default=None, description="nbagent config keys overriding the files.")


class ReplyArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")

    thread_id: str = Field(min_length=1, description="The thread_id an earlier agent call returned.")
    prompt: str = Field(description="The next message in that thread.")


OUTPUT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "thread_id": {"type": "string", "description": "Pass to agent-reply to continue this thread."},
        "text": {"type": "string", "description": "The agent's final answer of this turn."},
    },
    "required": ["thread_id", "text"],
}


def _input_schema(model: type[BaseModel]) -> dict[str, Any]:
    schema = model.model_json_schema()
    schema.pop("title", None)
    for prop in schema.get("properties", {}).values():
        prop.pop("title", None)
        if "anyOf" in prop:  # Optional[X] -> X: the field is optional by not being required
            branches = [b for b in prop.pop("anyOf") if b.get("type") != "null"]
            if len(branches) == 1:
                prop.update(branches[0])
        prop.pop("default", None)
    return schema


AGENT_TOOL = types.Tool(
    name="agent",
    title="nbagent: start a thread",
    description=(
        "Start a new nbagent thread and run one turn: the agent works with its tools (approvals "
        "and questions are asked back to you) and returns its final answer and a thread_id."
    ),
    input_schema=_input_schema(AgentArgs),
    output_schema=OUTPUT_SCHEMA,
    annotations=types.ToolAnnotations(read_only_hint=False, destructive_hint=True, open_world_hint=True),
)

REPLY_TOOL = types.Tool(
    name="agent-reply",
    title="nbagent: continue a thread",
    description="Continue an nbagent thread by id with another prompt; the agent sees the thread's history.",
    input_schema=_input_schema(ReplyArgs),
    output_schema=OUTPUT_SCHEMA,
    annotations=types.ToolAnnotations(read_only_hint=False, destructive_hint=True, open_world_hint=True),
)

TOOLS = [AGENT_TOOL, REPLY_TOOL]
