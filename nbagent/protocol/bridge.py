"""Messages between the kernel and the nbagent JupyterLab extension over the ``nbagent.bridge`` comm.

The kernel opens the comm (the extension registers the target on every notebook's kernel) and
sends :class:`BridgeRequest` envelopes; the extension acknowledges each at once
(:class:`BridgeAck`) and answers it with one :class:`BridgeReply` carrying the same ``id``. A page
that loads on a kernel that already has bridge comms (a reload, a second tab) opens a comm of its
own to the same target with its :class:`HelloResponse` as the open data. The payloads (``*Params`` / ``*Response``) know nothing of the envelope,
so they can be built and tested without a comm.

``labextension/src/bridge_protocol.ts`` mirrors this module name for name and field for field
(a test compares them): change both together and bump :data:`BRIDGE_PROTOCOL_VERSION` when a
change is not backwards compatible.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

BRIDGE_PROTOCOL_VERSION = 4
"""Bumped on incompatible changes; the extension reports its own in :class:`HelloResponse`.
2: writes carry ``expected_source`` (an older extension would ignore it and overwrite a cell the
person changed), and ``delete_cell``/``move_cell``. 3: the page sends :class:`PageRequest`
(an older kernel would leave it unanswered). 4: the page acknowledges each request at once
(:class:`BridgeAck`; an older page never would, so the kernel would take it for gone) and, when
it loads on a kernel that already has bridge comms, opens a comm of its own with its hello."""

COMM_TARGET = "nbagent.bridge"
"""The comm target name the extension registers on each notebook's kernel."""

MAX_NOTEBOOK_THREADS = 100
"""How many of the thread ids in a notebook's ``metadata.nbagent.threads`` are considered: the
latest. Whoever sent the notebook wrote them, and each one offered costs a look-up in the store."""

MAX_CHECKED_CELLS = 500
"""How many badged cells one ``check_cells`` asks about: the page asks for the first ones when it
loads and the rest when the pointer enters them, so a notebook of forged badges cannot make the
kernel look up more than this at once."""

PageMethod = Literal["check_cell", "check_cells", "undo_cell"]
BridgeMethod = Literal["hello", "read_notebook", "insert_cell", "replace_cell", "delete_cell", "move_cell", "run_cell"]
CellType = Literal["code", "markdown", "raw"]


class BridgeMessage(BaseModel):
    """Base of every bridge message. Unknown fields are ignored so that a newer extension
    (extra fields in replies) still works with an older kernel package, and vice versa."""

    model_config = ConfigDict(extra="ignore", populate_by_name=True)


class Provenance(BridgeMessage):
    """Which agent call wrote a cell; stored as the cell's ``metadata.nbagent``."""

    thread_id: str
    turn_id: str
    call_id: str


# -- envelope -----------------------------------------------------------------------------------


class BridgeRequest(BridgeMessage):
    """Kernel -> extension."""

    id: str
    """Correlates the reply; unique per kernel process."""
    method: BridgeMethod
    params: dict[str, Any] = Field(default_factory=dict)
    """One of the ``*Params`` models below, dumped to JSON."""
    to: str = ""
    """The ``frontend_id`` of the hello the kernel kept. Every browser open on the notebook gets
    the kernel's comm messages; only that one answers and writes, so with real-time collaboration
    (one shared document) a cell is inserted once, not once per browser. Empty: anyone answers."""


class BridgeErrorInfo(BridgeMessage):
    code: str
    """Stable kind: ``not_found``, ``bad_request``, ``conflict`` (the cell's source is not the
    ``expected_source``), ``no_notebook``, ``kernel``, ``internal``..."""
    message: str


class BridgeReply(BridgeMessage):
    """Extension -> kernel: exactly one per request, ``result`` on success or ``error``."""

    id: str
    ok: bool
    result: dict[str, Any] | None = None
    """One of the ``*Response`` models below, as JSON."""
    error: BridgeErrorInfo | None = None


class BridgeAck(BridgeMessage):
    """Extension -> kernel, as soon as the addressed page has a request and before it acts: a
    page that is gone (reloaded, tab closed) never sends one, so the kernel knows within a few
    seconds instead of waiting out the reply's timeout, and knows the request was not seen."""

    ack: str
    """The request's ``id``."""


class PageRequest(BridgeMessage):
    """Extension -> kernel: what a person clicked in the page. The kernel trusts none of it (the
    page shows what the notebook file says, and anyone may edit that) and answers one
    :class:`PageReply` with the same ``page_id``."""

    page_id: str
    method: PageMethod
    params: dict[str, Any] = Field(default_factory=dict)


class PageReply(BridgeMessage):
    """Kernel -> extension: the answer to one :class:`PageRequest`, in words for the person."""

    page_id: str
    ok: bool
    message: str
    confirmed: list[bool] | None = None
    """``check_cells``: for each cell asked, in order, whether this kernel made that call."""


class UndoCellParams(BridgeMessage):
    """Undo the one cell change an agent call made (the "Undo" on the cell's provenance badge);
    ``check_cell`` asks only whether the kernel would, so the page shows "Undo" where it may."""

    thread_id: str
    turn_id: str
    call_id: str


class CheckCellsParams(BridgeMessage):
    """``check_cells``: ``check_cell`` for the badges of a notebook the page just showed, so each
    is drawn confirmed or not without a hover; an older kernel leaves it unanswered and the page
    asks on hover instead, which needs no protocol version bump."""

    cells: list[Provenance] = Field(max_length=MAX_CHECKED_CELLS)


# -- payloads -----------------------------------------------------------------------------------


class HelloParams(BridgeMessage):
    """Sent as the comm's open data, so one round trip both opens the comm and proves the
    extension is there."""

    protocol_version: int = BRIDGE_PROTOCOL_VERSION
    kernel_package_version: str = ""


class HelloResponse(BridgeMessage):
    protocol_version: int
    extension_version: str = ""
    app: str = ""
    """``JupyterLab`` or ``Jupyter Notebook`` (the application's name)."""
    path: str = ""
    """The notebook's path relative to the server root."""
    frontend_id: str = ""
    """This browser page's bridge, random per page; the kernel addresses its requests to it."""
    tab_id: str = ""
    """The browser tab, the same across reloads (session storage): a new page's hello with the
    tab id of the page the kernel kept says that page is gone, not merely joined by another."""


class OutputSummary(BridgeMessage):
    """One output of a cell, reduced to text the model can read."""

    output_type: str
    """``stream``, ``execute_result``, ``display_data`` or ``error``."""
    text: str = ""
    """Stream text, ``text/plain`` of data outputs, or ``ename: evalue`` plus the traceback."""
    mime_types: list[str] = Field(default_factory=list)
    truncated: bool = False


class CellInfo(BridgeMessage):
    id: str
    index: int
    cell_type: CellType
    source: str
    execution_count: int | None = None
    outputs: list[OutputSummary] = Field(default_factory=list)
    provenance: Provenance | None = None
    """Set when an agent call wrote the cell."""


class ReadNotebookParams(BridgeMessage):
    include_outputs: bool = True
    max_output_chars: int = 2000
    """Per output; longer text is cut and marked ``truncated``."""


class ReadNotebookResponse(BridgeMessage):
    path: str
    cells: list[CellInfo] = Field(default_factory=list)
    threads: list[str] = Field(default_factory=list)
    """Thread ids recorded in the notebook's ``metadata.nbagent.threads`` (see ``notebook_threads``)."""

    @field_validator("threads", mode="before")
    @classmethod
    def _bounded(cls, value: object) -> list[str]:
        return notebook_threads(value)


def notebook_threads(value: object) -> list[str]:
    """The thread ids of a notebook's metadata, oldest first: the strings of a list (any other
    shape is none), each once, the latest ``MAX_NOTEBOOK_THREADS`` of them."""
    if not isinstance(value, list):
        return []
    return list(dict.fromkeys(t for t in value if isinstance(t, str)))[-MAX_NOTEBOOK_THREADS:]


class InsertCellParams(BridgeMessage):
    source: str
    cell_type: CellType = "code"
    index: int | None = None
    """Position of the new cell; ``None`` with no ``after_cell_id`` appends."""
    after_cell_id: str | None = None
    """Insert right after this cell (wins over ``index``)."""
    provenance: Provenance | None = None
    save: bool = True
    """Save the notebook after the write, so the file on disk has what the agent wrote."""
    outputs: list[dict[str, Any]] = Field(default_factory=list)
    """A code cell's outputs (nbformat), when an undo puts back a deleted cell; they come back
    untrusted (no ``metadata.trusted``), so HTML is sanitized and no script runs."""
    execution_count: int | None = None
    """A code cell's execution count, with ``outputs``."""
    cell_id: str | None = None
    """The id the new cell takes when it is a valid cell id that no cell holds now (an undo puts
    a deleted cell back under its own id); else it gets a new one."""
    metadata: dict[str, Any] = Field(default_factory=dict)
    """The new cell's metadata (an undo puts back a deleted cell's); ``trusted`` is never taken,
    and ``provenance``, when set, wins over its ``nbagent``."""
    attachments: dict[str, Any] | None = None
    """A markdown or raw cell's attachments (nbformat), when an undo puts back a deleted cell."""


class InsertCellResponse(BridgeMessage):
    cell_id: str
    index: int


class ReplaceCellParams(BridgeMessage):
    cell_id: str
    source: str
    provenance: Provenance | None = None
    save: bool = True
    expected_source: str | None = None
    """Write only if the cell's live source is exactly this (what the agent last read), else
    answer ``conflict`` and change nothing; ``None`` writes whatever the cell holds. The check
    and the write happen in one step of the front end's event loop, so no keystroke falls between."""
    restore_provenance: bool = False
    """An undo: the cell's provenance becomes ``provenance`` exactly, removed when it is ``None``
    (without it, ``None`` leaves the cell's provenance as it is)."""


class ReplaceCellResponse(BridgeMessage):
    cell_id: str
    index: int
    old_source: str = ""
    old_provenance: Provenance | None = None
    """The cell's provenance before the write (none, or an earlier call's): its undo puts it back."""


class DeleteCellParams(BridgeMessage):
    cell_id: str
    expected_source: str | None = None
    """As in :class:`ReplaceCellParams`."""
    save: bool = True
    max_outputs_chars: int | None = None
    """The deleted cell's metadata, attachments and outputs are sent back, in that order, while
    their JSON stays within this many characters; metadata or attachments past it are named in
    ``omitted``, each output past it is sent as ``{"output_type": "omitted", "chars": N}``, so
    nothing huge crosses the comm. ``None``: all of them."""


class DeleteCellResponse(BridgeMessage):
    cell_id: str
    index: int
    """Where the cell was."""
    old_source: str = ""
    cell_type: CellType = "code"
    """The deleted cell's type, so an undo puts back a markdown cell as markdown."""
    outputs: list[dict[str, Any]] = Field(default_factory=list)
    """The deleted code cell's outputs (nbformat, cut as ``max_outputs_chars`` says): kept for
    undo in the rollout only, never shown to the model."""
    execution_count: int | None = None
    metadata: dict[str, Any] | None = None
    """The deleted cell's metadata but ``trusted``, kept for undo like ``outputs``."""
    attachments: dict[str, Any] | None = None
    """A deleted markdown or raw cell's attachments, kept for undo like ``outputs``."""
    omitted: list[Literal["metadata", "attachments"]] = Field(default_factory=list)
    """What was not sent for being over ``max_outputs_chars``."""


class MoveCellParams(BridgeMessage):
    cell_id: str
    to_index: int
    """The cell's position after the move (0 = first)."""
    expected_source: str | None = None
    """As in :class:`ReplaceCellParams`."""
    save: bool = True


class MoveCellResponse(BridgeMessage):
    cell_id: str
    from_index: int
    to_index: int


class RunCellParams(BridgeMessage):
    cell_id: str
    wait: bool = True
    """Reply when the cell finished (with its outputs); ``False`` replies once it is queued,
    which is the only safe choice while the kernel is busy with the cell that awaits the turn."""
    max_output_chars: int = 2000


class RunCellResponse(BridgeMessage):
    cell_id: str
    status: Literal["ok", "error", "aborted", "queued"]
    execution_count: int | None = None
    outputs: list[OutputSummary] = Field(default_factory=list)


PARAMS_BY_METHOD: dict[str, type[BridgeMessage]] = {
    "hello": HelloParams,
    "read_notebook": ReadNotebookParams,
    "insert_cell": InsertCellParams,
    "replace_cell": ReplaceCellParams,
    "delete_cell": DeleteCellParams,
    "move_cell": MoveCellParams,
    "run_cell": RunCellParams,
}
RESPONSE_BY_METHOD: dict[str, type[BridgeMessage]] = {
    "hello": HelloResponse,
    "read_notebook": ReadNotebookResponse,
    "insert_cell": InsertCellResponse,
    "replace_cell": ReplaceCellResponse,
    "delete_cell": DeleteCellResponse,
    "move_cell": MoveCellResponse,
    "run_cell": RunCellResponse,
}


class BridgeError(Exception):
    """A request failed: the extension answered with an error, or the comm closed."""

    def __init__(self, method: str, message: str, code: str = "error") -> None:
        super().__init__(message)
        self.method = method
        self.code = code
