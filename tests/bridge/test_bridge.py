"""The kernel-side bridge against a simulated extension (a fake comm)."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable

import pytest

from nbagent.notebook.bridge import BridgeError, BridgeTimeout, BridgeUnavailable, NotebookBridge
from nbagent.protocol.bridge import (
    BRIDGE_PROTOCOL_VERSION,
    COMM_TARGET,
    CellInfo,
    InsertCellParams,
    InsertCellResponse,
    OutputSummary,
    Provenance,
    ReadNotebookResponse,
    RunCellParams,
)
from tests.bridge.fakes import GONE, HELLO, FakeFactory, error, ok
from tests.waiting import until

# A reply as the extension sends it for a two-cell notebook (recorded from JupyterLab 4.6).
RECORDED_READ = {
    "path": "work/demo.ipynb",
    "cells": [
        {"id": "a1", "index": 0, "cell_type": "code", "source": "%load_ext nbagent", "execution_count": 1,
         "outputs": [], "provenance": None},
        {"id": "b2", "index": 1, "cell_type": "code", "source": "print(1)", "execution_count": 2,
         "outputs": [{"output_type": "stream", "text": "1\n", "mime_types": [], "truncated": False}],
         "provenance": {"thread_id": "thr_1", "turn_id": "turn_1", "call_id": "call_1"}},
    ],
    "threads": ["thr_1"],
}


def serve(request: dict) -> dict | None:
    method = request["method"]
    if method == "hello":
        return ok(request, HELLO)
    if method == "read_notebook":
        return ok(request, RECORDED_READ)
    if method == "insert_cell":
        return ok(request, {"cell_id": "new1", "index": request["params"]["index"] or 0})
    if method == "replace_cell":
        return error(request, "not_found", 'no cell with id "zz"')
    if method == "run_cell":
        return None  # never answers
    return error(request, "bad_request", f"unknown method {method}")


async def test_hello_is_the_open_data_and_is_cached() -> None:
    factory = FakeFactory(serve)
    bridge = NotebookBridge(factory)
    assert await bridge.available()
    assert await bridge.available()
    assert factory.targets == [COMM_TARGET]
    opened = factory.comms[0].sent[0]
    assert opened["method"] == "hello" and opened["params"]["protocol_version"] == BRIDGE_PROTOCOL_VERSION
    assert bridge.hello is not None and bridge.hello.path == "work/demo.ipynb"


async def test_read_notebook_parses_a_recorded_reply() -> None:
    bridge = NotebookBridge(FakeFactory(serve))
    notebook = await bridge.read_notebook()
    assert notebook == ReadNotebookResponse(
        path="work/demo.ipynb",
        cells=[
            CellInfo(id="a1", index=0, cell_type="code", source="%load_ext nbagent", execution_count=1),
            CellInfo(id="b2", index=1, cell_type="code", source="print(1)", execution_count=2,
                     outputs=[OutputSummary(output_type="stream", text="1\n")],
                     provenance=Provenance(thread_id="thr_1", turn_id="turn_1", call_id="call_1")),
        ],
        threads=["thr_1"],
    )


async def test_requests_carry_ids_and_typed_params() -> None:
    factory = FakeFactory(serve)
    bridge = NotebookBridge(factory)
    provenance = Provenance(thread_id="t", turn_id="u", call_id="c")
    reply = await bridge.insert_cell(InsertCellParams(source="x = 1", index=3, provenance=provenance))
    assert reply == InsertCellResponse(cell_id="new1", index=3)
    sent = factory.comms[0].sent[1]
    assert sent["method"] == "insert_cell" and sent["id"] != factory.comms[0].sent[0]["id"]
    assert sent["params"]["provenance"] == {"thread_id": "t", "turn_id": "u", "call_id": "c"}


async def test_an_error_reply_raises_with_its_code_and_the_method() -> None:
    bridge = NotebookBridge(FakeFactory(serve))
    from nbagent.protocol.bridge import ReplaceCellParams

    with pytest.raises(BridgeError) as info:
        await bridge.replace_cell(ReplaceCellParams(cell_id="zz", source=""))
    assert info.value.code == "not_found" and info.value.method == "replace_cell"
    assert "replace_cell failed (not_found)" in str(info.value) and "zz" in str(info.value)


async def test_a_request_without_reply_times_out_naming_the_request() -> None:
    factory = FakeFactory(serve)
    bridge = NotebookBridge(factory)
    started = time.monotonic()
    with pytest.raises(BridgeTimeout) as info:
        await bridge.run_cell(RunCellParams(cell_id="a1"), timeout=0.2)
    assert 0.15 < time.monotonic() - started < 2
    request_id = factory.comms[0].sent[1]["id"]
    assert str(info.value) == f"notebook bridge: no reply to run_cell (request {request_id}) within 0.2 s"
    # A late reply to the timed-out request is dropped and later requests still work.
    factory.comms[0].deliver(ok({"id": request_id}, {"cell_id": "a1", "status": "ok"}))
    assert (await bridge.read_notebook()).path == "work/demo.ipynb"


async def test_a_silent_front_end_is_absent_after_the_hello_timeout_and_cached() -> None:
    factory = FakeFactory(lambda request: None)
    bridge = NotebookBridge(factory, hello_timeout=0.2, absent_ttl=60)
    started = time.monotonic()
    assert not await bridge.available()
    assert time.monotonic() - started < 1
    assert factory.comms[0].closed  # the probe does not leave a comm behind
    probe = factory.comms[0]
    sent = len(probe.sent)
    assert not await bridge.available()
    assert len(factory.comms) == 1 and len(probe.sent) == sent  # answered from the cache: nothing sent
    assert bridge.page_gone() is None  # no page ever answered: no extension, not a closed tab
    with pytest.raises(BridgeUnavailable, match="did not answer within 0.2 s"):
        await bridge.read_notebook()


async def test_an_absent_verdict_expires_so_a_late_install_is_found() -> None:
    now = [0.0]
    answers = [False]
    factory = FakeFactory(lambda request: ok(request, HELLO) if answers[0] else None)
    bridge = NotebookBridge(factory, hello_timeout=0.1, absent_ttl=30, clock=lambda: now[0])
    assert not await bridge.available()
    answers[0] = True
    now[0] = 10
    assert not await bridge.available()  # still cached
    now[0] = 31
    assert await bridge.available()
    assert len(factory.comms) == 2


async def test_a_front_end_that_closes_the_comm_is_absent_at_once() -> None:
    factory = FakeFactory(serve, close_on_open=True)
    bridge = NotebookBridge(factory, hello_timeout=5)
    started = time.monotonic()
    assert not await bridge.available()
    assert time.monotonic() - started < 0.5


async def test_a_comm_closed_mid_request_fails_it_and_the_next_request_reopens() -> None:
    factory = FakeFactory(serve)
    bridge = NotebookBridge(factory)
    task = asyncio.ensure_future(bridge.run_cell(RunCellParams(cell_id="a1"), timeout=5))
    await until(lambda: factory.comms and any(isinstance(m, dict) and m.get("method") == "run_cell"
                                              for m in factory.comms[0].sent), "the run_cell request to be sent", 5)
    factory.comms[0].remote_close()
    with pytest.raises(BridgeError, match="comm closed before run_cell"):
        await task
    assert (await bridge.read_notebook()).threads == ["thr_1"]
    assert len(factory.comms) == 2


def holding_frontend() -> tuple[list[dict], Callable[[dict], dict | None]]:
    """A frontend that answers hello and holds every other request for the test to answer."""
    held: list[dict] = []

    def frontend(request: dict) -> dict | None:
        if request["method"] == "hello":
            return ok(request, HELLO)
        held.append(request)
        return None

    return held, frontend


async def test_concurrent_requests_are_matched_by_id_whatever_the_reply_order() -> None:
    held, frontend = holding_frontend()
    factory = FakeFactory(frontend)
    bridge = NotebookBridge(factory)
    first = asyncio.ensure_future(bridge.insert_cell(InsertCellParams(source="1")))
    second = asyncio.ensure_future(bridge.insert_cell(InsertCellParams(source="2")))
    await until(lambda: len(held) == 2, "both requests to reach the front end", 5)
    for request in reversed(held):
        factory.comms[0].deliver(ok(request, {"cell_id": "id-" + request["params"]["source"], "index": 0}))
    assert (await first).cell_id == "id-1" and (await second).cell_id == "id-2"


async def test_a_reply_delivered_from_another_thread_resolves_on_the_loop() -> None:
    held, frontend = holding_frontend()
    factory = FakeFactory(frontend)
    bridge = NotebookBridge(factory)
    task = asyncio.ensure_future(bridge.read_notebook())
    await until(lambda: held, "the request to reach the front end", 5)
    thread = threading.Thread(target=factory.comms[0].deliver, args=(ok(held[0], {"path": "a/b.ipynb", "cells": []}),))
    thread.start()
    thread.join()
    assert (await asyncio.wait_for(task, 2)).path == "a/b.ipynb"


async def test_a_malformed_reply_is_a_clear_error() -> None:
    bridge = NotebookBridge(FakeFactory(lambda r: ok(r, HELLO) if r["method"] == "hello" else ok(r, {"cells": 3})))
    with pytest.raises(BridgeError, match="malformed read_notebook reply"):
        await bridge.read_notebook()


async def test_outside_a_kernel_the_default_bridge_is_absent_without_waiting() -> None:
    bridge = NotebookBridge(hello_timeout=5)
    started = time.monotonic()
    assert not await bridge.available()
    assert time.monotonic() - started < 0.5


async def test_an_extension_speaking_another_protocol_version_is_refused_with_a_clear_reason() -> None:
    factory = FakeFactory(lambda r: ok(r, {**HELLO, "protocol_version": 99, "extension_version": "9.0.0"}))
    bridge = NotebookBridge(factory)
    with pytest.raises(BridgeUnavailable, match=f"speaks bridge protocol 99, this kernel's nbagent speaks {BRIDGE_PROTOCOL_VERSION}"):
        await bridge.connect()
    assert factory.comms[0].closed


async def test_requests_are_addressed_to_the_page_whose_hello_was_kept() -> None:
    """Every page open on the notebook gets the kernel's messages (with real-time collaboration,
    all on one shared document): only the page whose hello was kept may answer and write."""
    factory = FakeFactory(lambda r: ok(r, {**HELLO, "frontend_id": "page-a"}) if r["method"] == "hello" else serve(r))
    bridge = NotebookBridge(factory)
    await bridge.read_notebook()
    hello, read = factory.comms[0].sent
    assert hello["to"] == "" and read["to"] == "page-a"


async def test_a_request_the_kept_page_does_not_take_goes_to_whichever_page_answers_a_new_hello() -> None:
    """The kept page was closed; another page of the notebook is open and answers a new hello:
    the write lands there within the acknowledgement timeout, not after the reply's."""
    gone = {"page-a": False}

    def pages(request: dict) -> dict | None:
        if request["method"] == "hello":
            return ok(request, {**HELLO, "frontend_id": "page-b" if gone["page-a"] else "page-a"})
        if request["to"] == "page-a" and gone["page-a"]:
            return GONE  # nobody takes it for a closed page
        return serve(request)

    factory = FakeFactory(pages)
    bridge = NotebookBridge(factory, ack_timeout=0.2, request_timeout=30)
    await bridge.read_notebook()
    gone["page-a"] = True
    inserted = await asyncio.wait_for(bridge.insert_cell(InsertCellParams(source="x = 1", index=1)), 5)
    assert inserted.cell_id == "new1"
    assert factory.comms[1].sent[-1]["to"] == "page-b" and factory.comms[1].sent[-1]["method"] == "insert_cell"
    assert not factory.comms[0].closed  # kept open: a page loaded later sees the kernel has a bridge


async def test_with_no_page_left_a_write_fails_at_once_saying_so() -> None:
    gone = [False]
    factory = FakeFactory(lambda r: (GONE if r["method"] != "hello" else None) if gone[0] else serve(r))
    bridge = NotebookBridge(factory, ack_timeout=0.2, hello_timeout=0.2, request_timeout=30)
    await bridge.read_notebook()
    gone[0] = True
    with pytest.raises(BridgeUnavailable) as info:
        await asyncio.wait_for(bridge.insert_cell(InsertCellParams(source="x = 1")), 5)
    assert "no page showing the notebook took insert_cell" in str(info.value)
    assert "is not open in a browser tab" in str(info.value)


def reloaded_page(tab: str, page: str) -> dict:
    return {**HELLO, "frontend_id": page, "tab_id": tab}


async def test_a_reloaded_page_says_hello_and_the_next_request_goes_to_it_at_once() -> None:
    held, frontend = holding_frontend()
    factory = FakeFactory(lambda r: ok(r, reloaded_page("tab-1", "page-a")) if r["method"] == "hello" else GONE)
    bridge = NotebookBridge(factory, comm_listener=factory.listen, ack_timeout=30, request_timeout=60)
    await bridge.connect()
    # A request sent before the new page said hello: the old page never takes it.
    early = asyncio.ensure_future(bridge.insert_cell(InsertCellParams(source="early")))
    await until(lambda: len(factory.comms[0].sent) == 2, "the early request to go out", 5)
    page = factory.page_opens(frontend, reloaded_page("tab-1", "page-a2"))
    await until(lambda: len(held) == 1, "the early request to reach the reloaded page", 5)
    assert held[0]["params"]["source"] == "early" and held[0]["to"] == "page-a2"
    assert factory.comms[0].closed  # the same tab's old page is gone
    page.deliver(ok(held[0], {"cell_id": "c-early", "index": 0}))
    assert (await asyncio.wait_for(early, 5)).cell_id == "c-early"
    later = asyncio.ensure_future(bridge.insert_cell(InsertCellParams(source="later")))
    await until(lambda: len(held) == 2, "the next request to reach the reloaded page", 5)
    page.deliver(ok(held[1], {"cell_id": "c-later", "index": 1}))
    assert (await asyncio.wait_for(later, 5)).cell_id == "c-later"


async def test_a_request_the_reloaded_page_had_taken_fails_at_once_saying_so() -> None:
    held, frontend = holding_frontend()
    factory = FakeFactory(frontend)
    bridge = NotebookBridge(factory, comm_listener=factory.listen, request_timeout=60)
    factory.frontend = lambda r: ok(r, reloaded_page("tab-1", "page-a")) if r["method"] == "hello" else frontend(r)
    task = asyncio.ensure_future(bridge.run_cell(RunCellParams(cell_id="a1")))
    await until(lambda: held, "the run_cell request to be taken", 5)
    factory.page_opens(serve, reloaded_page("tab-1", "page-a2"))
    with pytest.raises(BridgeError, match="was reloaded while run_cell was in progress"):
        await asyncio.wait_for(task, 5)


async def test_a_second_tab_takes_the_requests_and_the_first_keeps_its_comm_for_clicks() -> None:
    factory = FakeFactory(lambda r: ok(r, reloaded_page("tab-1", "page-a")) if r["method"] == "hello" else serve(r))
    bridge = NotebookBridge(factory, comm_listener=factory.listen)
    await bridge.connect()
    second = factory.page_opens(serve, reloaded_page("tab-2", "page-b"))
    assert (await bridge.read_notebook()).path == "work/demo.ipynb"
    assert second.sent[-1]["method"] == "read_notebook" and second.sent[-1]["to"] == "page-b"
    assert not factory.comms[0].closed


@pytest.mark.parametrize("hello", [
    {**reloaded_page("tab-1", "page-x"), "protocol_version": 1},
    {**reloaded_page("tab-1", "page-x"), "path": "elsewhere/other.ipynb"},  # another notebook on this kernel
    {"frontend_id": "page-x", "tab_id": "tab-1"},  # no protocol version
    {"protocol_version": "four", "frontend_id": ["page-x"]},
])
async def test_a_page_hello_of_another_protocol_or_notebook_is_closed_and_changes_nothing(hello: dict) -> None:
    factory = FakeFactory(lambda r: ok(r, reloaded_page("tab-1", "page-a")) if r["method"] == "hello" else serve(r))
    bridge = NotebookBridge(factory, comm_listener=factory.listen)
    await bridge.connect()
    stranger = factory.page_opens(serve, hello)
    assert stranger.closed and bridge.hello is not None and bridge.hello.frontend_id == "page-a"
    assert not factory.comms[0].closed
    assert (await bridge.read_notebook()).path == "work/demo.ipynb" and factory.comms[0].sent[-1]["to"] == "page-a"
