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
Where a page of the notebook answered before, the same verdict means the notebook is not open in
a browser tab now, not that the extension is missing: :meth:`NotebookBridge.page_gone` says so.

A page can go without the kernel hearing of it (a reload, a closed tab: the browser drops its
connection, nobody closes the comm). So the page acknowledges every request at once, and one
that is not acknowledged within ``ack_timeout`` was not seen: the kept page is gone, a new hello
finds whichever page is there and the request goes to it, or fails saying no page is open. And a
page that loads while the kernel has bridge comms (a reload, a second tab) opens a comm of its
own with its hello, which the kernel keeps from then on: the first request after a reload goes
straight to the new page. When that hello comes from the same browser tab as the kept page's, the
old page is gone: its comm is closed and a request it had taken fails at once (done or not is
unknown), while one it had not taken goes to the new page.

This module knows nothing of tools or sessions: ``nbagent.tools.notebook`` builds on it.
"""

from __future__ import annotations

import asyncio
import itertools
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

from pydantic import ValidationError

from nbagent.protocol.bridge import (
    BRIDGE_PROTOCOL_VERSION,
    COMM_TARGET,
    RESPONSE_BY_METHOD,
    BridgeAck,
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
PageHandler = Callable[[PageRequest], Awaitable[PageReply]]
"""Answers what a person clicked in the page, and what a page that loaded asks of its badges."""


class CommLike(Protocol):
    """What the bridge needs of a comm (ipykernel's ``Comm`` or a test double)."""

    def send(self, data: Any = None, metadata: Any = None, buffers: Any = None) -> None: ...
    def on_msg(self, callback: Callable[[dict[str, Any]], Any]) -> None: ...
    def on_close(self, callback: Callable[[dict[str, Any]], Any]) -> None: ...
    def close(self, data: Any = None, metadata: Any = None, buffers: Any = None) -> None: ...


CommFactory = Callable[[str, dict[str, Any]], CommLike]
"""``(target_name, open_data) -> comm``; the comm is open when it returns."""
PageOpened = Callable[[CommLike, dict[str, Any]], None]
"""``(comm, comm_open message)``: a page opened a comm to the bridge's target."""
CommListener = Callable[[str, PageOpened], None]
"""``(target_name, callback)``: register the target the pages open their comms to."""


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


def _kernel_comm_listener(target_name: str, callback: PageOpened) -> None:
    """Accept the comms pages open to ``target_name`` through ipykernel's comm manager."""
    from comm import get_comm_manager

    get_comm_manager().register_target(target_name, callback)


@dataclass
class _Pending:
    """A request in flight: the comm it went out on, its acknowledgement, its reply."""

    method: str
    loop: asyncio.AbstractEventLoop
    reply: asyncio.Future[BridgeReply]
    ack: asyncio.Future[bool]
    """True: the page has it. False: its comm was retired before the page took it: send again."""
    comm: CommLike | None = None


class NotebookBridge:
    """Request/reply client over one comm, reopened on demand after the front end closes it.

    Args:
        comm_factory: opens the comm; defaults to ipykernel's comm manager.
        hello_timeout: seconds to wait for the extension's hello before calling it absent.
        request_timeout: default seconds to wait for any other reply.
        ack_timeout: seconds for the addressed page to acknowledge a request before it counts
            as gone.
        comm_listener: registers the target pages open their own comms to (after a reload, in
            a second tab); defaults to ipykernel's with the default factory, else none.
        absent_ttl: seconds an "absent" verdict is cached before probing again (a user may
            install the extension and reload the page).
    """

    def __init__(
        self,
        comm_factory: CommFactory | None = None,
        *,
        hello_timeout: float = 2.0,
        request_timeout: float = 30.0,
        ack_timeout: float = 3.0,
        absent_ttl: float = 60.0,
        clock: Callable[[], float] = time.monotonic,
        comm_listener: CommListener | None = None,
    ) -> None:
        self._factory = comm_factory or _kernel_comm_factory
        self._listener = comm_listener or (_kernel_comm_listener if comm_factory is None else None)
        self._listening = False
        self.hello_timeout = hello_timeout
        self.request_timeout = request_timeout
        self.ack_timeout = ack_timeout
        self.absent_ttl = absent_ttl
        self._clock = clock
        self._ids = itertools.count(1)
        self._comm: CommLike | None = None
        self._hello: HelloResponse | None = None
        self._path = ""
        """The notebook of the last hello kept: a page of another notebook on this kernel does not
        take its requests by saying hello on its own."""
        self._absent_since: float | None = None
        self._absent_reason = ""
        self._seen: float | None = None
        """When a page last said hello or took a request (the bridge's clock); never: ``None``."""
        self._pending: dict[str, _Pending] = {}
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

    def page_gone(self) -> float | None:
        """Seconds since a page of this notebook last answered, when one did in this kernel and
        none does now: the extension is there, the notebook is just not open in a browser tab.
        ``None`` while a page is kept, or when none ever answered (no extension in this front end)."""
        if self._seen is None or (self._comm is not None and self._hello is not None):
            return None
        return max(0.0, self._clock() - self._seen)

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
                comm, hello = await self._open()
            except BridgeError as exc:
                self._absent_since = self._clock()
                self._absent_reason = str(exc)
                raise BridgeUnavailable("hello", str(exc)) from exc
            self._absent_since, self._seen = None, self._clock()
            if self._comm is None or self._hello is None:  # else a page's own hello came first
                self._comm, self._hello, self._path = comm, hello, hello.path
            self._listen()
            return self._hello

    async def _open(self) -> tuple[CommLike, HelloResponse]:
        request = BridgeRequest(id=self._next_id(), method="hello", params=HelloParams(kernel_package_version=_version()).model_dump())
        entry = self._expect(request, None)
        self._settle(entry.loop, entry.ack, True)  # the reply is the hello's acknowledgement
        try:
            comm = self._factory(COMM_TARGET, request.model_dump())
        except BridgeError:
            self._pending.pop(request.id, None)
            raise
        except Exception as exc:  # a broken comm manager must read as "absent", not crash the tool
            self._pending.pop(request.id, None)
            raise BridgeUnavailable("hello", f"could not open the notebook bridge comm: {exc!r}") from exc
        entry.comm = comm
        self._wire(comm)
        try:
            reply = await self._await(request, entry, self.hello_timeout)
        except BridgeTimeout as exc:
            self._retire(comm, close=True)
            raise BridgeUnavailable(
                "hello",
                f"the nbagent JupyterLab extension did not answer within {self.hello_timeout:g} s: the notebook "
                "is not open in a browser tab, or its front end has no nbagent extension (VS Code, Colab, "
                "classic Notebook or a headless run)",
            ) from exc
        except BridgeError:
            self._retire(comm)
            raise
        hello = HelloResponse.model_validate(reply)
        if hello.protocol_version != BRIDGE_PROTOCOL_VERSION:
            self._retire(comm, close=True)
            raise BridgeUnavailable(
                "hello",
                f"the nbagent JupyterLab extension {hello.extension_version or '(unknown version)'} speaks bridge "
                f"protocol {hello.protocol_version}, this kernel's nbagent speaks {BRIDGE_PROTOCOL_VERSION}: "
                "install the same nbagent version for the server and the kernel",
            )
        return comm, hello

    def _listen(self) -> None:
        """From the first hello on, accept the comms pages open with their own hello."""
        if self._listening or self._listener is None:
            return
        self._listening = True
        try:
            self._listener(COMM_TARGET, self._on_page_open)
        except Exception:  # noqa: BLE001 - without it a reloaded page is found by the ack timeout
            pass

    def _on_page_open(self, comm: CommLike, msg: dict[str, Any]) -> None:
        """A page loaded on this kernel (a reload, a second tab) and says hello on a comm of its
        own: requests go to it from now on. The page kept until now is gone when the new one is
        in the same browser tab; else it stays, for the clicks of the person looking at it."""
        data = (msg.get("content") or {}).get("data") or {}
        try:
            hello = HelloResponse.model_validate(data)
        except ValidationError:
            hello = None
        if hello is None or hello.protocol_version != BRIDGE_PROTOCOL_VERSION or (self._path and hello.path != self._path):
            comm.close()  # the kernel's own hello says why, should a request need this page
            return
        self._wire(comm)
        old, kept = self._comm, self._hello
        self._comm, self._hello, self._absent_since, self._seen = comm, hello, None, self._clock()
        if old is not None and old is not comm:
            reloaded = bool(hello.tab_id) and kept is not None and kept.tab_id == hello.tab_id
            self._retire(old, close=reloaded, gone="was reloaded" if reloaded else None)

    def close(self) -> None:
        """Close the comm and fail every pending request."""
        if self._comm is not None:
            comm = self._comm
            self._retire(comm, close=True, gone="closed", resend=False)

    # -- requests -----------------------------------------------------------------------------

    async def request(self, method: str, params: BridgeMessage, *, timeout: float | None = None) -> BridgeMessage:
        """Send one request and return its typed response.

        Raises:
            BridgeUnavailable: the extension is not there.
            BridgeTimeout: no reply within ``timeout`` (default ``request_timeout``).
            BridgeError: the extension answered with an error, or the comm closed meanwhile.
        """
        budget = self.request_timeout if timeout is None else timeout
        deadline = time.monotonic() + budget
        payload = params.model_dump(mode="json")
        for _ in range(3):  # the kept page, then whichever page answers a new hello, then once more
            try:
                await self.connect()
            except BridgeUnavailable as exc:
                raise BridgeUnavailable(method, f"notebook bridge: no page showing the notebook took {method}: {exc}", "no_page") from exc
            comm = self._comm
            if comm is None:  # closed between the hello and now
                raise BridgeError(method, f"notebook bridge: the comm closed before {method} was sent", "closed")
            to = self._hello.frontend_id if self._hello is not None else ""
            request = BridgeRequest(id=self._next_id(), method=method, params=payload, to=to)  # type: ignore[arg-type]  # a method of RESPONSE_BY_METHOD
            entry = self._expect(request, comm)
            try:
                comm.send(request.model_dump(mode="json"))
            except Exception as exc:
                self._pending.pop(request.id, None)
                raise BridgeError(method, f"notebook bridge: could not send {method}: {exc!r}") from exc
            try:
                taken = await asyncio.wait_for(asyncio.shield(entry.ack), min(self.ack_timeout, max(0.0, deadline - time.monotonic())))
            except TimeoutError:
                # Not taken: that page is gone (reloaded, tab closed). Its comm stays open, so a
                # page opened later sees the kernel has bridge comms and says hello on its own.
                self._pending.pop(request.id, None)
                self._retire(comm)
                continue
            if not taken:
                continue  # its comm was retired before the page took it: to the page kept now
            result = await self._await(request, entry, max(0.0, deadline - time.monotonic()), said=budget)
            break
        else:
            raise BridgeUnavailable(method, f"notebook bridge: no page showing the notebook took {method}", "no_page")
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

    def _expect(self, request: BridgeRequest, comm: CommLike | None) -> _Pending:
        loop = asyncio.get_running_loop()
        entry = _Pending(request.method, loop, loop.create_future(), loop.create_future(), comm)
        self._pending[request.id] = entry
        return entry

    def _wire(self, comm: CommLike) -> None:
        comm.on_msg(lambda msg: self._on_msg(comm, msg))
        comm.on_close(lambda _msg: self._retire(comm, gone="closed"))

    async def _await(self, request: BridgeRequest, entry: _Pending, timeout: float, *, said: float | None = None) -> dict[str, Any]:
        """The reply's result within ``timeout`` (the error names ``said``, the whole budget)."""
        future = entry.reply
        try:
            reply: BridgeReply = await asyncio.wait_for(asyncio.shield(future), timeout)
        except TimeoutError:
            self._pending.pop(request.id, None)
            future.cancel()
            raise BridgeTimeout(
                request.method,
                f"notebook bridge: no reply to {request.method} (request {request.id}) within {timeout if said is None else said:g} s",
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

    def _on_msg(self, comm: CommLike, msg: dict[str, Any]) -> None:
        """Comm message handler: resolve the matching future on its own loop, or answer the
        page's request in a task of this (the kernel's) loop, on the comm it came by."""
        data = (msg.get("content") or {}).get("data") or {}
        try:
            reply = BridgeReply.model_validate(data)
        except ValidationError:
            try:
                ack = BridgeAck.model_validate(data)
            except ValidationError:
                self._page_request(comm, data)
                return
            taken = self._pending.get(ack.ack)
            if taken is not None:
                self._seen = self._clock()
                self._settle(taken.loop, taken.ack, True)
            return
        entry = self._pending.pop(reply.id, None)
        if entry is None:
            return  # late reply to a request that timed out, or a second front end answering
        self._settle(entry.loop, entry.ack, True)
        self._settle(entry.loop, entry.reply, reply)

    def _page_request(self, comm: CommLike, data: Any) -> None:
        try:
            request = PageRequest.model_validate(data)
        except ValidationError:
            return  # garbage: nothing waits for it
        task = asyncio.ensure_future(self._answer_page(comm, request))
        self._page_tasks.add(task)
        task.add_done_callback(self._page_tasks.discard)

    async def _answer_page(self, comm: CommLike, request: PageRequest) -> None:
        if self._page_handler is None:
            reply = PageReply(page_id=request.page_id, ok=False,
                              message="nbagent is not running an agent in this kernel (run %load_ext nbagent)")
        else:
            try:
                reply = await self._page_handler(request)
            except Exception as exc:  # boundary: said to the page, never raised into the comm handler
                reply = PageReply(page_id=request.page_id, ok=False, message=f"{request.method} failed: {exc}")
        try:
            comm.send(reply.model_dump(exclude_none=True))
        except Exception:  # noqa: BLE001 - the page went meanwhile: nobody is left to tell
            pass

    def _retire(self, comm: CommLike, *, close: bool = False, gone: str | None = None, resend: bool = True) -> None:
        """Send no more requests through ``comm``. Those it carried that no page took go again
        to the page kept now (``resend``); those a page took fail when ``gone`` says that page
        went (a reload, a closed comm), else their reply may still come and is awaited."""
        if comm is self._comm:
            self._comm = None
            self._hello = None
        if close:
            try:
                comm.close()
            except Exception:  # noqa: BLE001 - closing what is already gone
                pass
        for rid, entry in list(self._pending.items()):
            if entry.comm is not comm:
                continue
            if resend and not entry.ack.done():
                self._settle(entry.loop, entry.ack, False)
            elif gone is not None or not entry.ack.done():
                del self._pending[rid]
                if gone == "closed":
                    said = f"notebook bridge: the comm closed before {entry.method} was answered"
                else:
                    said = (f"notebook bridge: the page showing the notebook {gone} while {entry.method} was in "
                            "progress, so whether it was done is unknown: read the notebook before doing it again")
                self._settle(entry.loop, entry.ack, True)
                self._settle(entry.loop, entry.reply, BridgeError(entry.method, said, "closed"))

    @staticmethod
    def _settle(loop: asyncio.AbstractEventLoop, future: asyncio.Future[Any], value: Any) -> None:
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
