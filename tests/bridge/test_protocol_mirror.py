"""The TypeScript message types mirror ``nbagent.protocol.bridge`` one to one."""

from __future__ import annotations

import re
import typing
from pathlib import Path

from nbagent.protocol import bridge as bridge_protocol
from nbagent.protocol.bridge import BridgeMessage

TS = Path(__file__).resolve().parents[2] / "labextension" / "src" / "bridge_protocol.ts"


def ts_interfaces() -> dict[str, dict[str, bool]]:
    """``{interface: {field: optional}}`` from the TypeScript file."""
    text = TS.read_text()
    found: dict[str, dict[str, bool]] = {}
    for match in re.finditer(r"export interface (\w+)(?: extends \w+)? \{(.*?)\}\n", text, re.S):
        fields = {m.group(1): bool(m.group(2)) for m in re.finditer(r"^\s+(\w+)(\?)?:", match.group(2), re.M)}
        found[match.group(1)] = fields
    return found


def py_models() -> dict[str, dict[str, bool]]:
    models = {}
    for name, value in vars(bridge_protocol).items():
        if isinstance(value, type) and issubclass(value, BridgeMessage):
            models[name] = {field: not info.is_required() for field, info in value.model_fields.items()}
    return models


def test_every_message_type_has_the_same_name_and_fields_in_typescript() -> None:
    assert ts_interfaces() == py_models()


def test_the_constants_and_method_names_match() -> None:
    text = TS.read_text()
    assert f"BRIDGE_PROTOCOL_VERSION = {bridge_protocol.BRIDGE_PROTOCOL_VERSION};" in text
    assert f"COMM_TARGET = '{bridge_protocol.COMM_TARGET}';" in text
    assert f"MAX_NOTEBOOK_THREADS = {bridge_protocol.MAX_NOTEBOOK_THREADS};" in text
    assert f"MAX_CHECKED_CELLS = {bridge_protocol.MAX_CHECKED_CELLS};" in text
    pages = re.search(r"export type PageMethod =(.*?);", text, re.S)
    assert pages is not None and re.findall(r"'(\w+)'", pages.group(1)) == list(typing.get_args(bridge_protocol.PageMethod))
    block = re.search(r"export type BridgeMethod =(.*?);", text, re.S)
    assert block is not None
    assert re.findall(r"'(\w+)'", block.group(1)) == list(typing.get_args(bridge_protocol.BridgeMethod))
    assert set(bridge_protocol.PARAMS_BY_METHOD) == set(typing.get_args(bridge_protocol.BridgeMethod))
