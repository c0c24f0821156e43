"""Python functions as tools: the schema comes from type hints (pydantic), the call goes through
the same router, events and approval engine as every other tool."""

from __future__ import annotations

import inspect
from collections.abc import Callable, Sequence
from typing import Any

import pydantic_core
from pydantic import BaseModel, ConfigDict, ValidationError, create_model

from nbagent.core.provider import ToolProvider
from nbagent.mcp.identity import validate_native_name
from nbagent.protocol import ApprovalMode, CallInfo, ToolAnnotations, ToolResult, ToolSource, ToolSpec
from nbagent.protocol.tools import ProgressFn
from nbagent.schema import definition_hash, sanitize_schema


def _arguments_model(fn: Callable[..., Any], name: str) -> type[BaseModel]:
    fields: dict[str, Any] = {}
    for param in inspect.signature(fn).parameters.values():
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            raise TypeError(f"tool {name!r}: *args/**kwargs cannot be described to a model")
        annotation = Any if param.annotation is inspect.Parameter.empty else param.annotation
        default = ... if param.default is inspect.Parameter.empty else param.default
        fields[param.name] = (annotation, default)
    return create_model(f"{name}_arguments", __config__=ConfigDict(extra="forbid"), **fields)


def own_tool_spec(
    name: str,
    description: str,
    parameters: dict[str, Any],
    *,
    source: ToolSource,
    title: str | None = None,
    annotations: ToolAnnotations | None = None,
    approval_mode: ApprovalMode = "auto",
    warnings: list[str] | None = None,
) -> ToolSpec:
    """The spec of a tool nbagent or the user defines (native or Python): trusted, so its own
    annotations may relax approval, and hashed like an MCP tool so memory binds to it."""
    return ToolSpec(
        name=name,
        description=description,
        parameters=parameters,
        input_schema=parameters,
        source=source,
        raw_name=name,
        title=title,
        annotations=annotations,
        approval_mode=approval_mode,
        trusted=True,
        definition_hash=definition_hash(description, parameters, annotations, title=title),
        warnings=warnings or [],
    )


def argument_errors(exc: ValidationError) -> str:
    """``index: Input should be ...; source: Field required``: each bad argument by its path, in one line."""
    return "; ".join(f"{'.'.join(map(str, e['loc'])) or 'arguments'}: {e['msg']}" for e in exc.errors())


def to_tool_result(value: Any) -> ToolResult:
    """Strings stay text; anything else is sent as JSON and kept as structured content."""
    if isinstance(value, ToolResult):
        return value
    if isinstance(value, str):
        return ToolResult.text(value)
    data = pydantic_core.to_jsonable_python(value, fallback=repr)
    return ToolResult(content=[], structured=data) if data is not None else ToolResult.text("null")


class FunctionTools(ToolProvider):
    """A ``ToolProvider`` of registered Python callables (sync or async)."""

    generation = 0
    """Bumped by every registration (the router re-reads the list only then)."""

    def __init__(self) -> None:
        self._tools: dict[str, tuple[ToolSpec, type[BaseModel], Callable[..., Any]]] = {}

    def register(
        self,
        fn: Callable[..., Any],
        *,
        name: str | None = None,
        description: str | None = None,
        read_only: bool = False,
        destructive: bool | None = None,
        approval_mode: ApprovalMode = "auto",
    ) -> ToolSpec:
        tool_name = name or fn.__name__
        validate_native_name(tool_name)
        model = _arguments_model(fn, tool_name)
        parameters, warnings = sanitize_schema(model.model_json_schema())
        text = description if description is not None else inspect.cleandoc(fn.__doc__ or "")
        annotations = ToolAnnotations(read_only_hint=read_only, destructive_hint=destructive)
        spec = own_tool_spec(
            tool_name, text, parameters, source="python", annotations=annotations, approval_mode=approval_mode,
            warnings=warnings,
        )
        self._tools[tool_name] = (spec, model, fn)
        self.generation += 1
        return spec

    def list_tools(self) -> Sequence[ToolSpec]:
        return [spec for spec, _, _ in self._tools.values()]

    async def call_tool(
        self, spec: ToolSpec, arguments: dict[str, Any], call: CallInfo, on_progress: ProgressFn | None = None
    ) -> ToolResult:
        entry = self._tools.get(spec.name)
        if entry is None:
            return ToolResult.error(f"tool {spec.name!r} is no longer registered")
        _, model, fn = entry
        try:
            validated = model.model_validate(arguments)
        except ValidationError as exc:
            return ToolResult.error(f"invalid arguments for {spec.name}: {argument_errors(exc)}")
        kwargs = {field: getattr(validated, field) for field in type(validated).model_fields}
        try:
            value = fn(**kwargs)
            if inspect.isawaitable(value):
                value = await value
        except Exception as exc:  # boundary: a crashing tool is a failed result the model can read
            return ToolResult.error(f"{spec.name} raised {type(exc).__name__}: {exc}")
        return to_tool_result(value)
