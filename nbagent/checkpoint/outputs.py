"""What undo needs of a cell beyond its source, kept so that it puts the cell back as it was
(DESIGN §20): a deleted cell's metadata, attachments and outputs, a replaced cell's provenance.

They go into the rollout only (``FunctionCallOutput.undo``), never into what the model reads,
and are redacted there like every other line. They can be large, so what is kept is capped:
per cell and per turn, in characters of JSON, metadata and attachments first; an output past the
cap is replaced by a visible marker saying so, which is what the undo puts back in its place,
and metadata or attachments past it are not kept (the undo says so). Multiline strings are
joined (nbformat allows a list of lines), so a secret split across two lines of a list is still
found whole by the redactor. Metadata never keeps ``trusted``: a cell put back is untrusted.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    OnErrorOmit,
    StrictInt,
    ValidationError,
    ValidatorFunctionWrapHandler,
    WrapValidator,
    model_validator,
)

from nbagent.protocol.bridge import Provenance

CELL_CHARS = 1_048_576
"""What one deleted cell's outputs may take in the rollout (characters of JSON)."""
TURN_CHARS = 4 * 1_048_576
"""What the deleted cells' outputs of one turn may take in the rollout, together."""
PROVENANCE_CHARS = 1_000
"""A replaced cell's provenance is kept when its JSON is within this (nbagent writes about 100
characters; a longer one was written by someone else): past it, the undo removes it."""
OUTPUT_TYPES = frozenset({"stream", "display_data", "execute_result", "error"})
MARKER = "[nbagent: an output of {size:,} characters was not kept for undo: over the limit of {cell:,} per cell and {turn:,} per turn]"


def marker(size: int) -> dict[str, Any]:
    """The output put back in place of one too large to keep."""
    return {"output_type": "stream", "name": "stderr", "text": MARKER.format(size=size, cell=CELL_CHARS, turn=TURN_CHARS) + "\n"}


def _joined(value: Any) -> Any:
    return "".join(value) if isinstance(value, list) and all(isinstance(v, str) for v in value) else value


def _normal(output: Any) -> dict[str, Any] | None:
    """``output`` as nbformat with multiline strings joined, or ``None`` when it is not an output."""
    if not isinstance(output, dict) or output.get("output_type") not in OUTPUT_TYPES:
        return None
    out = dict(output)
    if "text" in out:
        out["text"] = _joined(out["text"])
    if isinstance(out.get("data"), dict):
        out["data"] = {str(k): _joined(v) for k, v in out["data"].items()}
    return out


def _size(output: Any) -> int:
    try:
        return len(json.dumps(output, ensure_ascii=False, allow_nan=False))
    except (TypeError, ValueError):
        return -1


def keep(outputs: Sequence[Any], budget: int) -> tuple[list[dict[str, Any]], int, int]:
    """The outputs kept within ``budget`` characters, in order, with a marker for each one past
    it (or sent as ``omitted`` by the extension); the characters they take; how many were not kept.
    Anything that is not an nbformat output is left out."""
    kept: list[dict[str, Any]] = []
    used = dropped = 0
    for output in outputs:
        if isinstance(output, dict) and output.get("output_type") == "omitted":
            size = output.get("chars")
            kept.append(marker(size if isinstance(size, int) and size >= 0 else 0))
            dropped += 1
            continue
        out = _normal(output)
        size = _size(out) if out is not None else -1
        if out is None or size < 0:
            continue
        if used + size > budget:
            kept.append(marker(size))
            dropped += 1
            continue
        kept.append(out)
        used += size
    return kept, used, dropped


def untrusted(metadata: Any) -> dict[str, Any]:
    """A cell's metadata as kept and put back: an object's string keys but ``trusted`` (which
    would let the outputs put back run their scripts)."""
    return {k: v for k, v in metadata.items() if isinstance(k, str) and k != "trusted"} if isinstance(metadata, dict) else {}


def keep_deleted(outputs: Sequence[Any], execution_count: int | None, metadata: Any, attachments: Any,
                 omitted: Sequence[str], budget: int) -> tuple[dict[str, Any] | None, int]:
    """A deleted cell's ``undo`` record within ``budget`` characters: its metadata (never
    ``trusted``) and attachments first, each whole or not at all (``not_kept`` names it; the
    extension names in ``omitted`` what it did not send), then its outputs (``keep``); and the
    characters it takes. ``None``: nothing to keep."""
    record: dict[str, Any] = {}
    not_kept = [name for name in omitted if name in ("metadata", "attachments")]
    used = 0
    for name, value in (("metadata", untrusted(metadata)), ("attachments", attachments if isinstance(attachments, dict) else {})):
        size = _size(value) if value else 0
        if size and (size < 0 or used + size > budget):
            not_kept.append(name)
        elif size:
            record[name], used = value, used + size
    kept, chars, dropped = keep(outputs, budget - used)
    if kept or execution_count is not None:
        record.update(outputs=kept, execution_count=execution_count, outputs_not_kept=dropped)
    if not_kept:
        record["not_kept"] = not_kept
    return record or None, used + chars


def kept_provenance(provenance: Provenance | None) -> dict[str, Any]:
    """A replaced cell's ``undo`` record: its provenance before (``None``: none, or one too large
    to be nbagent's)."""
    before = provenance.model_dump(mode="json") if provenance is not None else None
    return {"provenance": before if before is not None and _size(before) <= PROVENANCE_CHARS else None}


def _or(default: Any) -> WrapValidator:
    """A field read as ``default`` when its value is not of its shape: the rest of the record
    still puts the cell back."""

    def wrap(value: Any, handler: ValidatorFunctionWrapHandler) -> Any:
        try:
            return handler(value)
        except ValidationError:
            return default

    return WrapValidator(wrap)


def _output(value: dict[Any, Any]) -> dict[str, Any]:
    if (out := _normal(value)) is None:
        raise ValueError("not an nbformat output")
    return out


_Output = Annotated[dict[Any, Any], AfterValidator(_output)]
"""An nbformat output, its multiline strings joined; anything else is left out of a list."""


class Restorable(BaseModel):
    """What an undo puts back besides a cell's source, as read back from a call's ``undo``
    record in the rollout (which anyone may edit): a field not of its shape is read as its
    default, an item not of its shape is left out, and no record makes the undo fail."""

    model_config = ConfigDict(frozen=True)

    outputs: Annotated[tuple[OnErrorOmit[_Output], ...], _or(())] = ()
    execution_count: Annotated[Annotated[StrictInt, Field(ge=0)] | None, _or(None)] = None
    outputs_not_kept: Annotated[Annotated[StrictInt, Field(ge=1)], _or(0)] = 0
    metadata: Annotated[dict[Any, Any], _or({}), AfterValidator(untrusted)] = {}
    attachments: Annotated[dict[Any, Any] | None, _or(None)] = None
    not_kept: Annotated[tuple[OnErrorOmit[Literal["metadata", "attachments"]], ...], _or(())] = ()
    provenance: Annotated[Provenance | None, _or(None)] = None
    restores_provenance: bool = False
    """A replace's record names the provenance before (an older one does not: left as it is)."""

    @model_validator(mode="before")
    @classmethod
    def _names_provenance(cls, record: Any) -> Any:
        return {**record, "restores_provenance": "provenance" in record} if isinstance(record, dict) else record


def restorable(kept: Any, cell_type: str) -> Restorable:
    """``kept``, a call's ``undo`` record, as an undo of a ``cell_type`` cell puts it back: a code
    cell's outputs and execution count, another's attachments."""
    try:
        record = Restorable.model_validate(kept)
    except ValidationError:  # no record, or not an object
        return Restorable()
    if cell_type == "code":
        return record.model_copy(update={"attachments": None})
    return record.model_copy(update={"outputs": (), "execution_count": None})
