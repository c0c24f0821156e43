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
from dataclasses import dataclass, field
from typing import Any

from pydantic import ValidationError

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


@dataclass(frozen=True)
class Restorable:
    """What an undo puts back besides a cell's source, as read back from a call's ``undo``
    record in the rollout (which anyone may edit): what is not of its shape is left out."""

    outputs: tuple[dict[str, Any], ...] = ()
    execution_count: int | None = None
    outputs_not_kept: int = 0
    metadata: dict[str, Any] = field(default_factory=dict)
    attachments: dict[str, Any] | None = None
    not_kept: tuple[str, ...] = ()
    provenance: Provenance | None = None
    restores_provenance: bool = False
    """A replace's record names the provenance before (an older one does not: left as it is)."""


def _count(value: Any, least: int = 0) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= least else None


def restorable(kept: Any, cell_type: str) -> Restorable:
    """``kept``, a call's ``undo`` record, as an undo of a ``cell_type`` cell puts it back."""
    kept = kept if isinstance(kept, dict) else {}
    outputs = kept.get("outputs") if cell_type == "code" else None
    attachments = kept.get("attachments") if cell_type != "code" else None
    not_kept = kept.get("not_kept") if isinstance(kept.get("not_kept"), list) else []
    try:
        provenance = Provenance.model_validate(kept["provenance"]) if kept.get("provenance") is not None else None
    except ValidationError:
        provenance = None
    return Restorable(
        outputs=tuple(o for o in (_normal(o) for o in outputs) if o is not None) if isinstance(outputs, list) else (),
        execution_count=_count(kept.get("execution_count")) if cell_type == "code" else None,
        outputs_not_kept=_count(kept.get("outputs_not_kept"), 1) or 0,
        metadata=untrusted(kept.get("metadata")),
        attachments=attachments if isinstance(attachments, dict) else None,
        not_kept=tuple(n for n in not_kept if n in ("metadata", "attachments")),
        provenance=provenance,
        restores_provenance="provenance" in kept,
    )
