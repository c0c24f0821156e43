"""A deleted cell's outputs, kept so that undo puts them back (DESIGN §20).

They go into the rollout only (``FunctionCallOutput.undo``), never into what the model reads,
and are redacted there like every other line. Outputs can be large, so what is kept is capped:
per cell and per turn, in characters of JSON; an output past the cap is replaced by a visible
marker saying so, which is what the undo puts back in its place. Multiline strings are joined
(nbformat allows a list of lines), so a secret split across two lines of a list is still found
whole by the redactor.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

CELL_CHARS = 1_048_576
"""What one deleted cell's outputs may take in the rollout (characters of JSON)."""
TURN_CHARS = 4 * 1_048_576
"""What the deleted cells' outputs of one turn may take in the rollout, together."""
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


def restorable(kept: Any) -> tuple[list[dict[str, Any]], int | None, int]:
    """The outputs, execution count and count not kept of a call's ``undo`` record as read back
    from the rollout (which anyone may edit): what is not of that shape is left out."""
    kept = kept if isinstance(kept, dict) else {}
    outputs = kept.get("outputs")
    found = [o for o in (_normal(o) for o in outputs) if o is not None] if isinstance(outputs, list) else []
    count = kept.get("execution_count")
    dropped = kept.get("outputs_not_kept")
    return (found, count if isinstance(count, int) and not isinstance(count, bool) else None,
            dropped if isinstance(dropped, int) and not isinstance(dropped, bool) and dropped > 0 else 0)
