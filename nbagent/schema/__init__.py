"""JSON Schemas of tools, wherever they come from (MCP servers, Python functions): the
sanitiser that makes one the model API accepts, the checker it is held to, strict mode, the
definition hash approvals are bound to, and a regex-free copy for checking values."""

from nbagent.schema.check import openai_schema_problems
from nbagent.schema.hash import canonical_bytes, definition_hash
from nbagent.schema.regexfree import without_regexes
from nbagent.schema.sanitize import sanitize_schema
from nbagent.schema.strict import make_strict
from nbagent.schema.subset import MAX_DEPTH

__all__ = [
    "MAX_DEPTH",
    "canonical_bytes",
    "definition_hash",
    "make_strict",
    "openai_schema_problems",
    "sanitize_schema",
    "without_regexes",
]
