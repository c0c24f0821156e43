"""What the model sees of the notebook, when the person turns it on (``%agent context on``).

At the start of each turn: the notebook's cells (id, type, first line, which raised) and the
kernel's names (type, and the shape of arrays and frames), within a byte budget, so "plot df by
month" works without a tool call to discover ``df``. Never a value: a name's *type* is read, and
the shape of numpy, pandas and polars objects, whose ``shape`` is plain data; any other object's
attributes are not touched, since reading them can run the user's code.
"""

from __future__ import annotations

import types
from collections.abc import Mapping
from typing import Any

from nbagent.protocol.bridge import ReadNotebookResponse

MAX_BYTES = 4096
"""Budget for each of the two parts; the model sees a note of what did not fit."""
FIRST_LINE = 80
_HIDDEN = frozenset({"In", "Out", "exit", "quit", "get_ipython", "open"})
_SHAPED = ("numpy", "pandas", "polars")
_SIZED = (list, tuple, dict, set, frozenset, str, bytes)


def describe_value(value: Any) -> str:
    """``DataFrame (1,000 × 3: month, sales, region)``, ``ndarray float64 (20, 5)``, ``list (12)``."""
    kind = type(value)
    label = kind.__qualname__ if kind.__module__ == "builtins" else f"{kind.__module__.split('.')[0]}.{kind.__qualname__}"
    if kind.__module__.split(".")[0] in _SHAPED:
        shape = getattr(value, "shape", None)
        if isinstance(shape, tuple) and all(isinstance(n, int) for n in shape):
            dims = " × ".join(f"{n:,}" for n in shape)
            columns = getattr(value, "columns", None) if kind.__qualname__ == "DataFrame" else None
            names = [str(c) for c in list(columns)[:12]] if columns is not None else []
            more = ", …" if columns is not None and len(columns) > 12 else ""
            dtype = getattr(value, "dtype", None) if kind.__qualname__ in ("ndarray", "Series") else None
            return f"{label}{' ' + str(dtype) if dtype is not None else ''} ({dims}{': ' + ', '.join(names) + more if names else ''})"
    if isinstance(value, _SIZED):
        return f"{label} (len {len(value):,})"
    return label


def namespace_summary(user_ns: Mapping[str, Any], max_bytes: int = MAX_BYTES) -> str:
    """One line per name the person defined (modules, private names and IPython's own skipped)."""
    lines = []
    for name, value in list(user_ns.items()):
        if name.startswith("_") or name in _HIDDEN or isinstance(value, types.ModuleType):
            continue
        if isinstance(value, (types.FunctionType, type)):
            lines.append(f"{name}: {'function' if isinstance(value, types.FunctionType) else 'class'}")
            continue
        try:
            lines.append(f"{name}: {describe_value(value)}")
        except Exception:  # noqa: BLE001 - a user's object may raise from __len__; its type is enough
            lines.append(f"{name}: {type(value).__qualname__}")
    return _within("Names in the kernel (types and shapes, no values):", lines, max_bytes)


def notebook_summary(notebook: ReadNotebookResponse, max_bytes: int = MAX_BYTES) -> str:
    """One line per cell: id, type, execution count, first line, and whether it raised."""
    lines = []
    for cell in notebook.cells:
        first = next((ln.strip() for ln in cell.source.splitlines() if ln.strip()), "")
        first = first if len(first) <= FIRST_LINE else first[: FIRST_LINE - 1] + "…"
        ran = f" [{cell.execution_count}]" if cell.execution_count else ""
        errors = [o.text.splitlines()[0] for o in cell.outputs if o.output_type == "error" and o.text]
        failed = f"  ERROR: {errors[0][:FIRST_LINE]}" if errors else ""
        lines.append(f"{cell.id} {cell.cell_type}{ran}: {first}{failed}")
    return _within(f"Cells of {notebook.path}:", lines, max_bytes)


def _within(title: str, lines: list[str], max_bytes: int) -> str:
    out, used = [title], len(title.encode()) + 1
    for n, line in enumerate(lines):
        size = len(line.encode()) + 1
        if used + size > max_bytes:
            out.append(f"… {len(lines) - n} more not shown")
            break
        out.append(line)
        used += size
    return "\n".join(out) if lines else f"{title} none"
