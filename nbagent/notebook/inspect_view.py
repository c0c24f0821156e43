"""``%agent inspect``: the live session's views as widgets, text or JSON (DESIGN §12.3).

Widgets where they render (tabs and accordions of HTML tables), the same text as
``nbagent inspect`` in a terminal or headless, ``--json`` for programs. Everything shown came
from servers or the model: every string is escaped for HTML, or made visible for text.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from IPython.display import display

from nbagent.core.inspect import RequestsView, RequestView, ToolView, TurnView
from nbagent.kit.inspect_text import parser, request_text, requests_text, tools_text, turn_text, wire_text
from nbagent.kit.ops import read_now
from nbagent.mcp.wire import WireMessage
from nbagent.notebook.html import badge, esc, muted, pre
from nbagent.notebook.options import UsageError
from nbagent.protocol import Inspect, InspectResult
from nbagent.textsafe import describe_for_display, visible_json

if TYPE_CHECKING:
    from nbagent.notebook.agent import KernelAgent

__all__ = ["run_inspect"]

_TABLE = '<table style="border-collapse:collapse;font-size:0.85em">{}</table>'
_EFFECT_COLOR = {"runs": "ok", "asks": "warn", "declined": "error"}


def _rows(rows: Sequence[Sequence[object]], head: Sequence[str] = ()) -> str:
    cell = '<td style="padding:1px 8px;vertical-align:top;text-align:left">{}</td>'
    out = ["<tr>" + "".join(f"<th style='padding:1px 8px;text-align:left'>{esc(h)}</th>" for h in head) + "</tr>"] if head else []
    out += ["<tr>" + "".join(cell.format(esc(v)) for v in row) + "</tr>" for row in rows]
    return _TABLE.format("".join(out))


def _html(value: str) -> Any:
    import ipywidgets as w

    return w.HTML(value=value)


def _accordion(children: list[tuple[str, Any]]) -> Any:
    import ipywidgets as w

    acc = w.Accordion(children=[c for _, c in children])
    acc.titles = tuple(describe_for_display(t) for t, _ in children)  # titles are text, never markup
    return acc


def _tabs(children: list[tuple[str, Any]]) -> Any:
    import ipywidgets as w

    tabs = w.Tab(children=[c for _, c in children])
    tabs.titles = tuple(t for t, _ in children)
    return tabs


def tools_widget(views: Sequence[ToolView]) -> Any:
    items = []
    for v in views:
        ident = _rows([("model-visible", v.name), ("server", v.server or "-"), ("raw name", v.raw_name),
                       ("source", v.source), ("title", v.title)])  # fmt: skip
        hints = _rows(list(v.annotations.items())) if v.annotations else muted("no annotations")
        approval = (badge(v.effective, _EFFECT_COLOR[v.effective]) +
                    esc(f" mode {v.approval_mode}, policy {v.policy}: {v.why}"))  # fmt: skip
        changes = _rows([(c.change, c.path, visible_json(c.raw), visible_json(c.exposed)) for c in v.schema_changes],
                        head=("change", "path", "raw", "exposed")) if v.schema_changes else muted("schema unchanged")  # fmt: skip
        warn = "".join(f"<div>{esc(x)}</div>" for x in v.warnings)
        body = f"{ident}<div><b>annotations</b> {hints}</div><div><b>approval</b> {approval}</div>" \
               f"<div><b>schema raw → exposed</b> {changes}</div>{warn}"
        items.append((f"{v.name} ({v.effective})", _html(body)))
    return _accordion(items) if items else _html(muted("no tools"))


def request_widget(view: RequestView) -> Any:
    head = esc(f"model {view.model}, purpose {view.purpose}, turn {view.turn_id or '-'}, thread {view.thread_id}")
    tools = _rows([(t["name"], t.get("description", "")) for t in view.tools], head=("tool", "description"))
    schemas = pre(visible_json(view.tools), max_height="24em")
    items = _rows([(i.get("type", ""), i.get("name") or i.get("tool") or "", visible_json(i)) for i in view.items],
                  head=("type", "name", "item"))  # fmt: skip
    return _tabs([
        ("instructions", _html(f"<div>{head}</div>{pre(view.instructions or '', max_height='24em')}")),
        (f"tools ({len(view.tools)})", _html(tools + schemas)),
        (f"items ({len(view.items)})", _html(items)),
    ])  # fmt: skip


def requests_widget(view: RequestsView) -> Any:
    """One request's tabs per fold, numbered from the turn's first request."""
    return _accordion([
        (f"request {n}: {r.purpose}, {len(r.tools)} tools, {len(r.items)} items", request_widget(r))
        for n, r in enumerate(view.requests, view.dropped + 1)
    ])  # fmt: skip


def turn_widget(view: TurnView) -> Any:
    rows = [(e.seq, f"{e.offset_ms:.1f}", e.type + (f" ×{e.count}" if e.count > 1 else ""), e.detail) for e in view.entries]
    ended = view.status or "running"
    return _html(f"<div>{esc(f'turn {view.turn_id}: {ended}')}</div>" + _rows(rows, head=("seq", "+ms", "type", "detail")))


def wire_widget(server: str, messages: Sequence[WireMessage]) -> Any:
    items = [
        (f"{m.seq} {'→' if m.direction == 'sent' else '←'} {m.kind} {m.method or ''} {'' if m.id is None else m.id}",
         _html(pre(visible_json(m.message), max_height="24em")))
        for m in messages
    ]  # fmt: skip
    return _accordion(items) if items else _html(muted(f"no messages kept for MCP server {server}"))


def _show(agent: KernelAgent, as_json: bool, data: Any, text: str, widget: Any) -> None:
    if as_json:
        print(json.dumps(data, ensure_ascii=False, default=str))
    elif agent.frontend() == "widgets":
        display(widget())
    else:
        print(describe_for_display(text))


def run_inspect(agent: KernelAgent, args: list[str]) -> None:
    """``%agent inspect tools | request [--all] | turn [ID] | wire SERVER [-n N]  [--json]``."""
    try:
        words = parser("%agent inspect", live=True).parse_args(args)
    except SystemExit:
        raise UsageError("inspect tools | request [--all] | turn [ID] | wire SERVER [-n N]  [--json]") from None
    s = agent.session
    if s is None:
        raise UsageError("no session yet (it opens with the first %%agent cell)")
    names = list(s.snapshot().servers)
    if words.view == "wire" and words.server not in names:
        raise UsageError(f"no MCP server named {words.server!r} (configured: {', '.join(names) or 'none'})")
    if words.view == "wire" and words.n < 1:
        raise UsageError("-n must be at least 1")
    answer = read_now(s, Inspect(view=words.view, turn_id=words.turn if words.view == "turn" else None,
                                 server=words.server if words.view == "wire" else None,
                                 last=words.n if words.view == "wire" else None,
                                 all=words.view == "request" and words.all))
    data = answer.data if isinstance(answer, InspectResult) else None  # as the events show it: redacted
    if words.view == "tools":
        views = [ToolView.model_validate(v) for v in data or []]
        _show(agent, words.json, [v.model_dump(mode="json") for v in views], tools_text(views),
              lambda: tools_widget(views))  # fmt: skip
    elif words.view == "request":
        if data is None:
            raise UsageError("no model request yet in this session")
        if words.all:
            every = RequestsView.model_validate(data)
            _show(agent, words.json, every.model_dump(mode="json"), requests_text(every), lambda: requests_widget(every))
        else:
            request = RequestView.model_validate(data)
            _show(agent, words.json, request.model_dump(mode="json"), request_text(request),
                  lambda: request_widget(request))  # fmt: skip
    elif words.view == "turn":
        if data is None:
            which = f"turn {words.turn}" if words.turn else "a turn"
            raise UsageError(f"no events kept for {which} in this session (nbagent inspect turn THREAD reads recorded ones)")
        turn = TurnView.model_validate(data)
        _show(agent, words.json, turn.model_dump(mode="json"), turn_text(turn), lambda: turn_widget(turn))
    else:
        messages = [WireMessage.model_validate(m) for m in data or []]
        _show(agent, words.json, {"server": words.server, "messages": [m.model_dump(mode="json") for m in messages]},
              wire_text(words.server, messages), lambda: wire_widget(words.server, messages))  # fmt: skip
