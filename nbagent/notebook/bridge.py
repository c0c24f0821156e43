"""Kernel side of the notebook bridge: a comm client of the nbagent JupyterLab extension.

The kernel opens a comm to the ``nbagent.bridge`` target (registered by the extension on each
notebook's kernel), sends requests with ids and awaits each reply as an asyncio future. The
futures are resolved from the comm's message handler, which ipykernel runs on the kernel's
event loop, so a turn running as a background task simply awaits them; the one thing that must
never happen is blocking the loop while waiting, because the reply arrives through that loop.

Where a new cell goes: an ``insert_cell`` with neither an index nor a cell id goes right below
the cell that started its turn (then below the cell inserted before it, so a turn's cells keep
their order), not at the end of the notebook after whatever blank cell the user left there. The
turn's view registers that cell with :meth:`NotebookBridge.anchor_turn` when the cell runs.

Absence of the extension (VS Code, Colab, classic Notebook, nbclient) is detected by the hello
sent as the comm's open data: JupyterLab without the extension closes an unknown comm at once,
other front ends stay silent and a short timeout decides. Both results are cached.

This module knows nothing of tools or sessions: ``nbagent.tools.notebook`` builds on it.
"""

from __future__ import annotations

import asyncio
import itertools
import time
from collections.abc import Awaitable, Callable
from typing import Any, Protocol, TypeVar

from pydantic import ValidationError

from nbagent.protocol.bridge import (
    BRIDGE_PROTOCOL_VERSION,
    COMM_TARGET,
    RESPONSE_BY_METHOD,
    BridgeError,
    BridgeMessage,
    BridgeReply,
    BridgeRequest,
    DeleteCellParams,
    DeleteCellResponse,
    HelloParams,
    HelloResponse,
    InsertCellParams,
    InsertCellResponse,
    MoveCellParams,
    MoveCellResponse,
    PageReply,
    PageRequest,
    ReadNotebookParams,
    ReadNotebookResponse,
    ReplaceCellParams,
    ReplaceCellResponse,
    RunCellParams,
    RunCellResponse,
)

R = TypeVar("R", bound=BridgeMessage)
PageHandler = Callable[[PageRequest], Awaitable[tuple[bool, str]]]
"""Answers what a person clicked in the page: ``(done, message)``."""


class CommLike(Protocol):
    """What the bridge needs of a comm (ipykernel's ``Comm`` or a test double)."""

    def send(self, data: Any = None, metadata: Any = None, buffers: Any = None) -> None: ...
    def on_msg(self, callback: Callable[[dict[str, Any]], Any]) -> None: ...
    def on_close(self, callback: Callable[[dict[str, Any]], Any]) -> None: ...
    def close(self, data: Any = None, metadata: Any = None, buffers: Any = None) -> None: ...


CommFactory = Callable[[str, dict[str, Any]], CommLike]
"""``(target_name, open_data) -> comm``; the comm is open when it returns."""


class BridgeTimeout(BridgeError):
    """No reply in time; the message names the request."""


class BridgeUnavailable(BridgeError):
    """The extension is not active in this front end (or there is no front end)."""


def _kernel_comm_factory(target_name: str, data: dict[str, Any]) -> CommLike:
    """Open a real comm through ipykernel; refuse at once when not inside a kernel."""
    try:
        from IPython import get_ipython
    except ImportError as exc:  # pragma: no cover - IPython is a dependency of ipykernel
        raise BridgeUnavailable("hello", "IPython is not installed") from exc
    shell = get_ipython()
    if shell is None or getattr(shell, "kernel", None) is None:
        raise BridgeUnavailable("hello", "not running inside a Jupyter kernel, so there is no notebook to talk to")
    from comm import create_comm

    return create_comm(target_name=target_name, data=data)


class NotebookBridge:
    """Request/reply client over one comm, reopened on demand after the front end closes it.

    Args:
        comm_factory: opens the comm; defaults to ipykernel's comm manager.
        hello_timeout: seconds to wait for the extension's hello before calling it absent.
        request_timeout: default seconds to wait for any other reply.
        absent_ttl: seconds an "absent" verdict is cached before probing again (a user may
            install the extension and reload the page).
    """

    def __init__(
        self,
        comm_factory: CommFactory | None = None,
        *,
        hello_timeout: float = 2.0,
        request_timeout: float = 30.0,
        absent_ttl: float = 60.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._factory = comm_factory or _kernel_comm_factory
        self.hello_timeout = hello_timeout
        self.request_timeout = request_timeout
        self.absent_ttl = absent_ttl
        self._clock = clock
        self._ids = itertools.count(1)
        self._comm: CommLike | None = None
        self._hello: HelloResponse | None = None
        self._absent_since: float | None = None
        self._absent_reason = ""
        self._pending: dict[str, tuple[str, asyncio.AbstractEventLoop, asyncio.Future[BridgeReply]]] = {}
        self._connect_lock: asyncio.Lock | None = None
        self._anchors: dict[str, str] = {}
        """turn id -> the cell a default insert goes below."""
        self._page_handler: PageHandler | None = None
        self._page_tasks: set[asyncio.Task[None]] = set()

    def serve_page(self, handler: PageHandler) -> None:
        """Answer the page's requests (a badge's "Undo") with ``handler``; unset, they are refused."""
        self._page_handler = handler

    # -- connection ---------------------------------------------------------------------------

    @property
    def hello(self) -> HelloResponse | None:
        """The extension's hello while connected."""
        return self._hello

    async def available(self) -> bool:
        """Whether the extension answers; at most one hello timeout per ``absent_ttl``."""
        try:
            await self.connect()
        except BridgeError:
            return False
        return True

    async def connect(self) -> HelloResponse:
        """Open the comm and exchange hellos, or raise :class:`BridgeUnavailable` (cached)."""
        if self._comm is not None and self._hello is not None:
            return self._hello
        if self._absent_since is not None and self._clock() - self._absent_since < self.absent_ttl:
            raise BridgeUnavailable("hello", self._absent_reason)
        if self._connect_lock is None:
            self._connect_lock = asyncio.Lock()
        async with self._connect_lock:
            if self._comm is not None and self._hello is not None:
                return self._hello
            try:
                hello = await self._open()
            except BridgeError as exc:
                self._absent_since = self._clock()
                self._absent_reason = str(exc)
                raise BridgeUnavailable("hello", str(exc)) from exc
            self._absent_since = None
            self._hello = hello
            return hello

    async def _open(self) -> HelloResponse:
        request = BridgeRequest(id=self._next_id(), method="hello", params=HelloParams(kernel_package_version=_version()).model_dump())
        future = self._expect(request)
        try:
            comm = self._factory(COMM_TARGET, request.model_dump())
        except BridgeError:
            self._pending.pop(request.id, None)
            raise
        except Exception as exc:  # a broken comm manager must read as "absent", not crash the tool
            self._pending.pop(request.id, None)
            raise BridgeUnavailable("hello", f"could not open the notebook bridge comm: {exc!r}") from exc
        comm.on_msg(self._on_msg)
        comm.on_close(lambda _msg: self._on_close(comm))
        self._comm = comm
        try:
            reply = await self._await(request, future, self.hello_timeout)
        except BridgeTimeout as exc:
            self._drop_comm(comm, close=True)
            raise BridgeUnavailable(
                "hello",
                f"the nbagent JupyterLab extension did not answer within {self.hello_timeout:g} s "
                "(front end without the extension, e.g. VS Code, Colab, classic Notebook or a headless run)",
            ) from exc
        except BridgeError:
            self._drop_comm(comm, close=False)
            raise
        hello = HelloResponse.model_validate(reply)
        if hello.protocol_version != BRIDGE_PROTOCOL_VERSION:
            self._drop_comm(comm, close=True)
            raise BridgeUnavailable(
                "hello",
                f"the nbagent JupyterLab extension {hello.extension_version or '(unknown version)'} speaks bridge "
                f"protocol {hello.protocol_version}, this kernel's nbagent speaks {BRIDGE_PROTOCOL_VERSION}: "
                "install the same nbagent version for the server and the kernel",
            )
        return hello

    def close(self) -> None:
        """Close the comm and fail every pending request."""
        if self._comm is not None:
            self._drop_comm(self._comm, close=True)

    # -- requests -----------------------------------------------------------------------------

    async def request(self, method: str, params: BridgeMessage, *, timeout: float | None = None) -> BridgeMessage:
        """Send one request and return its typed response.

        Raises:
            BridgeUnavailable: the extension is not there.
            BridgeTimeout: no reply within ``timeout`` (default ``request_timeout``).
            BridgeError: the extension answered with an error, or the comm closed meanwhile.
        """
        await self.connect()
        comm = self._comm
        if comm is None:  # closed between the hello and now
            raise BridgeError(method, f"notebook bridge: the comm closed before {method} was sent", "closed")
        to = self._hello.frontend_id if self._hello is not None else ""
        request = BridgeRequest(id=self._next_id(), method=method, params=params.model_dump(mode="json"), to=to)  # type: ignore[arg-type]  # a method of RESPONSE_BY_METHOD
        future = self._expect(request)
        try:
            comm.send(request.model_dump(mode="json"))
        except Exception as exc:
            self._pending.pop(request.id, None)
            raise BridgeError(method, f"notebook bridge: could not send {method}: {exc!r}") from exc
        try:
            result = await self._await(request, future, self.request_timeout if timeout is None else timeout)
        except BridgeTimeout:
            if not self._pending:
                # The page whose hello was kept may be gone (closed, reloaded) while another page
                # of the notebook is open: the next request says hello again, to whoever is there.
                self._drop_comm(comm, close=True)
            raise
        response_type = RESPONSE_BY_METHOD[method]
        try:
            return response_type.model_validate(result)
        except ValidationError as exc:
            raise BridgeError(method, f"notebook bridge: malformed {method} reply: {exc}", "bad_reply") from exc

    async def read_notebook(self, params: ReadNotebookParams | None = None) -> ReadNotebookResponse:
        return await self._typed("read_notebook", params or ReadNotebookParams(), ReadNotebookResponse)

    def anchor_turn(self, turn_id: str, cell_id: str | None) -> None:
        """Default inserts of ``turn_id`` go below ``cell_id`` (the turn's own cell)."""
        if cell_id:
            self._anchors[turn_id] = cell_id

    async def insert_cell(self, params: InsertCellParams) -> InsertCellResponse:
        turn = params.provenance.turn_id if params.provenance else None
        anchor = self._anchors.get(turn) if turn else None
        if turn is None or anchor is None or params.index is not None or params.after_cell_id:
            return await self._typed("insert_cell", params, InsertCellResponse)
        try:
            reply = await self._typed("insert_cell", params.model_copy(update={"after_cell_id": anchor}), InsertCellResponse)
        except BridgeError as exc:
            if exc.code != "not_found":
                raise
            # The user deleted the turn's cell meanwhile: the end of the notebook is what is left.
            self._anchors.pop(turn, None)
            return await self._typed("insert_cell", params, InsertCellResponse)
        self._anchors[turn] = reply.cell_id
        return reply

    async def replace_cell(self, params: ReplaceCellParams) -> ReplaceCellResponse:
        return await self._typed("replace_cell", params, ReplaceCellResponse)

    async def delete_cell(self, params: DeleteCellParams) -> DeleteCellResponse:
        return await self._typed("delete_cell", params, DeleteCellResponse)

    async def move_cell(self, params: MoveCellParams) -> MoveCellResponse:
        return await self._typed("move_cell", params, MoveCellResponse)

    async def run_cell(self, params: RunCellParams, *, timeout: float | None = None) -> RunCellResponse:
        return await self._typed("run_cell", params, RunCellResponse, timeout=timeout)

    async def _typed(self, method: str, params: BridgeMessage, kind: type[R], *, timeout: float | None = None) -> R:
        response = await self.request(method, params, timeout=timeout)
        assert isinstance(response, kind)
        return response

    # -- internals ----------------------------------------------------------------------------

    def _next_id(self) -> str:
        return f"r{next(self._ids)}"

    def _expect(self, request: BridgeRequest) -> asyncio.Future[Any]:
        loop = asyncio.get_running_loop()
        future: asyncio.Future[Any] = loop.create_future()
        self._pending[request.id] = (request.method, loop, future)
        return future

    async def _await(self, request: BridgeRequest, future: asyncio.Future[Any], timeout: float) -> dict[str, Any]:
        try:
            reply: BridgeReply = await asyncio.wait_for(asyncio.shield(future), timeout)
        except TimeoutError:
            self._pending.pop(request.id, None)
            future.cancel()
            raise BridgeTimeout(
                request.method,
                f"notebook bridge: no reply to {request.method} (request {request.id}) within {timeout:g} s",
                "timeout",
            ) from None
        except asyncio.CancelledError:
            self._pending.pop(request.id, None)
            future.cancel()
            raise
        if not reply.ok:
            info = reply.error
            code = info.code if info else "error"
            message = info.message if info else "no error message"
            raise BridgeError(request.method, f"notebook bridge: {request.method} failed ({code}): {message}", code)
        return reply.result or {}

    def _on_msg(self, msg: dict[str, Any]) -> None:
        """Comm message handler: resolve the matching future on its own loop, or answer the
        page's request in a task of this (the kernel's) loop."""
        data = (msg.get("content") or {}).get("data") or {}
        try:
            reply = BridgeReply.model_validate(data)
        except ValidationError:
            try:
                request = PageRequest.model_validate(data)
            except ValidationError:
                return  # garbage: nothing waits for it
            task = asyncio.ensure_future(self._answer_page(request))
            self._page_tasks.add(task)
            task.add_done_callback(self._page_tasks.discard)
            return
        entry = self._pending.pop(reply.id, None)
        if entry is None:
            return  # late reply to a request that timed out, or a second front end answering
        _method, loop, future = entry
        self._resolve(loop, future, reply)

    async def _answer_page(self, request: PageRequest) -> None:
        if self._page_handler is None:
            done, said = False, "nbagent is not running an agent in this kernel (run %load_ext nbagent)"
        else:
            try:
                done, said = await self._page_handler(request)
            except Exception as exc:  # boundary: said to the page, never raised into the comm handler
                done, said = False, f"{request.method} failed: {exc}"
        if self._comm is not None:
            self._comm.send(PageReply(page_id=request.page_id, ok=done, message=said).model_dump())

    def _on_close(self, comm: CommLike) -> None:
        if comm is self._comm:
            self._drop_comm(comm, close=False)

    def _drop_comm(self, comm: CommLike, *, close: bool) -> None:
        if comm is self._comm:
            self._comm = None
            self._hello = None
        if close:
            try:
                comm.close()
            except Exception:
                pass
        pending, self._pending = self._pending, {}
        for method, loop, future in pending.values():
            self._resolve(loop, future, BridgeError(method, f"notebook bridge: the comm closed before {method} was answered", "closed"))

    @staticmethod
    def _resolve(loop: asyncio.AbstractEventLoop, future: asyncio.Future[Any], value: Any) -> None:
        def settle() -> None:
            if future.done():
                return
            if isinstance(value, BaseException):
                future.set_exception(value)
            else:
                future.set_result(value)

        try:
            running = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        if running is loop:
            settle()
        elif not loop.is_closed():
            loop.call_soon_threadsafe(settle)


def running_cell_id() -> str | None:
    """The id of the notebook cell whose execution is running now, as the front end sent it
    (JupyterLab and Notebook 7 put ``cellId`` in the execute request's metadata)."""
    try:
        from IPython import get_ipython

        kernel = getattr(get_ipython(), "kernel", None)
        parent = kernel.get_parent() if kernel is not None else None
    except Exception:  # noqa: BLE001 - no kernel, or one without parents: no cell to name
        return None
    cell_id = ((parent or {}).get("metadata") or {}).get("cellId")
    return cell_id if isinstance(cell_id, str) and cell_id else None


def _version() -> str:
    try:
        from nbagent._version import __version__

        return __version__
    except Exception:  # pragma: no cover
        return ""


_default: NotebookBridge | None = None


def get_bridge() -> NotebookBridge:
    """The kernel's one bridge (one comm per kernel, shared by every tool and front end)."""
    global _default
    if _default is None:
        _default = NotebookBridge()
    return _default
