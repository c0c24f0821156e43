"""One ``%%agent`` cell: show the turn's view, submit the turn, and await it only when asked.

The default is a background task: the cell returns at once and the view keeps updating.
``--wait`` is a real top-level ``await`` in the cell (the cell transformer in
``transform.py`` rewrites ``%%agent`` cells into ``await``), which is the one way of blocking a
cell that still lets widget clicks in on ipykernel 7.4 (DESIGN §9). A kernel interrupt cancels
that await; the turn is interrupted with an ``Interrupt`` op and the thread stays usable.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from nbagent.notebook.agent import KernelAgent
from nbagent.notebook.options import CELL_USAGE, CellOptions, UsageError, interpolate, parse_cell_line
from nbagent.notebook.views import HEADLESS_ASK_TIMEOUT, Header, TurnDisplay, show_turn
from nbagent.protocol import Event, NewThread, ResumeThread, TurnAborted, TurnFailed, UserTurn


@dataclass
class PreparedTurn:
    op: UserTurn
    options: CellOptions
    view: TurnDisplay
    wait: bool
    frontend: str


def _print_usage(error: str) -> None:
    print(f"%%agent: {error}\n{CELL_USAGE}" if error else CELL_USAGE, file=sys.stderr)


def model_label(agent: KernelAgent, model: str | None) -> tuple[str, bool]:
    """How a turn's header names its model, and whether it is scripted: a per-turn ``model`` as
    the open session's client names it (as typed, before the session opens or when the name is
    bad: the turn itself reports that), else the session's configured model."""
    if model:
        if agent.session is not None:
            try:
                client = agent.session.model_client(model)
                return client.label, client.scripted
            except Exception:  # noqa: BLE001 - a bad model name is reported by the turn itself
                pass
        from nbagent.models.factory import is_replay

        return model, is_replay(model)
    configured = agent.configured
    return (configured.model_label, configured.scripted) if configured else ("model", False)


def header(agent: KernelAgent, op: UserTurn, thread: str) -> Header:
    """What the turn runs with, as its display names it: a ``--policy`` the requirements refuse
    is not shown as if it ran (under ``full-auto`` the header is an alarm)."""
    session, configured = agent.session, agent.configured
    label, scripted = model_label(agent, op.model)
    asked = op.policy
    if asked and agent.config is not None and agent.config.requirements.refusal(
        "allowed_approval_policies", "approval_policy", asked
    ):
        asked = None  # the session refuses the turn and says why; nothing runs under what was asked
    policy = asked or (session.snapshot().policy if session else (configured.policy if configured else "on-request"))
    return Header(model_label=label, scripted=scripted, thread=thread, policy=policy, context=agent.context_on)


def headless_note(code_answers: bool) -> str:
    """What a turn with no notebook UI does with its asks. The policy stays the notebook's own
    (its config, or ``--policy``): only who can answer differs."""
    if code_answers:
        return ("no notebook UI detected: this notebook's code answers approvals and questions"
                f" (nbagent.notebook.answers_asks); one it leaves is declined after {HEADLESS_ASK_TIMEOUT:g} s")
    return ("no notebook UI detected and no code in this notebook answers (nbagent.notebook.answers_asks):"
            " a call that needs approval, or a server's question, is declined at once")


def prepare(agent: KernelAgent, line: str, body: str) -> PreparedTurn | None:
    """Parse, decide wait and who can answer for this front end, and display the turn's view (in
    the cell). A headless run (nbconvert, papermill, nbclient) keeps the notebook's own policy."""
    try:
        options = parse_cell_line(line)
        goal = interpolate(body, agent.shell.user_ns) if options.interpolate else body
    except UsageError as exc:
        _print_usage(str(exc))
        return None
    goal = goal.strip()
    if not goal:
        _print_usage("the cell body is the goal: write what the agent should do below the %%agent line")
        return None
    frontend = agent.frontend()
    notes: list[str] = []
    wait = options.wait
    interactive: bool | None = None
    if frontend == "headless":
        if not wait:
            notes.append("no notebook UI detected: waiting for the turn in this cell")
        wait = True
        interactive = agent.code_answers
    if options.sandbox is not None:
        notes.append(f"sandbox {options.sandbox} for this turn's shell commands (MCP servers keep the sandbox they started in)")
    if frontend == "text" and not wait:
        wait = True  # a terminal runs the event loop only while a cell runs
    op = UserTurn(
        prompt=goal, entry="magic", model=options.model, policy=options.policy, interactive=interactive,
        ask_timeout_sec=HEADLESS_ASK_TIMEOUT if interactive else None,
    )
    now = agent.session.snapshot() if agent.session is not None else None
    thread = options.thread or (now.thread_name or now.thread_id if now else "new")
    shown = header(agent, op, str(thread))
    if interactive is not None and shown["policy"] != "never":  # under never the header says it all
        notes.append(headless_note(interactive))
    view = show_turn(agent, shown, turn_id=op.turn_id, wait=wait, note="; ".join(notes) or None)
    return PreparedTurn(op, options, view, wait, frontend)


async def _switch_thread(agent: KernelAgent, options: CellOptions) -> str | None:
    session = await agent.ready()
    if options.new:
        await session.perform(NewThread(name=options.thread))
        return f"new thread {options.thread or session.snapshot().thread_id}"
    now = session.snapshot()
    if options.thread and options.thread not in (now.thread_id, now.thread_name):
        try:
            await session.perform(ResumeThread(thread=options.thread))
            return f"resumed thread {options.thread}"
        except KeyError:  # no thread of that id or name is saved: a new one by that name
            await session.perform(NewThread(name=options.thread))
            return f"new thread {options.thread}"
    return None


async def drive(agent: KernelAgent, turn: PreparedTurn) -> Event:
    """Open the session if needed, switch threads, submit the turn and wait for its end."""
    try:
        session = await agent.ready()
        await _switch_thread(agent, turn.options)
        sandbox = agent.turn_sandbox(turn.options.sandbox)
    except Exception as exc:
        failed = TurnFailed(message=agent.error or f"{type(exc).__name__}: {exc}", code="config")
        event = Event(turn_id=turn.op.turn_id, msg=failed)
        turn.view.handle(event)
        return event
    now = session.snapshot()
    if agent.configured is not None:
        turn.view.set_header(**header(agent, turn.op, now.thread_name or now.thread_id))
    ending = agent.watch_turn(turn.op.turn_id, turn.view)
    if now.running:
        turn.view.handle_queued()
    with agent.awaited(turn.wait), agent.sandboxed(turn.op.turn_id, sandbox):
        session.submit(turn.op)
        return await ending


async def run_cell(agent: KernelAgent, line: str, body: str) -> None:
    """The awaited form of a ``%%agent`` cell (what the cell transformer calls)."""
    turn = prepare(agent, line, body)
    if turn is None:
        return
    task = agent.spawn(drive(agent, turn))
    if not turn.wait:
        return
    interrupted = False

    def on_interrupt() -> None:
        nonlocal interrupted
        interrupted = True
        if not agent.stop(turn.op.turn_id) and turn.op.turn_id not in agent.endings:
            task.cancel()  # not submitted yet (the session was still opening)

    with sigint_calls(on_interrupt):
        try:
            await asyncio.shield(task)
        except asyncio.CancelledError:
            on_interrupt()  # the cell's await itself was cancelled
            try:
                await asyncio.wait_for(asyncio.shield(task), timeout=10)
            except (TimeoutError, asyncio.CancelledError):
                pass
    if interrupted:
        if not task.done():
            turn.view.handle(Event(turn_id=turn.op.turn_id, msg=TurnAborted(reason="interrupted")))
        print("[nbagent] turn interrupted; the thread is intact", file=sys.stderr)


@contextlib.contextmanager
def sigint_calls(callback: Callable[[], None]) -> Iterator[None]:
    """Route a kernel interrupt (SIGINT) to ``callback`` on the event loop while awaiting.

    Measured on ipykernel 7.4: an interrupt does not cancel a cell's top-level await until the
    awaited thing ends by itself, so ``--wait`` installs its own loop-level handler.
    """
    loop = asyncio.get_running_loop()
    previous = signal.getsignal(signal.SIGINT)
    try:
        loop.add_signal_handler(signal.SIGINT, callback)
    except (ValueError, RuntimeError, NotImplementedError):  # not the main thread, or no signals
        yield
        return
    try:
        yield
    finally:
        loop.remove_signal_handler(signal.SIGINT)
        signal.signal(signal.SIGINT, previous)


def start_in_background(agent: KernelAgent, line: str, body: str) -> None:
    """The plain (not awaited) cell magic: ``--wait`` cannot block here, so say so."""
    turn = prepare(agent, line, body)
    if turn is None:
        return
    if turn.wait:
        print(
            "[nbagent] --wait needs IPython's autoawait (%autoawait on); running in the background",
            file=sys.stderr,
        )
    agent.spawn(drive(agent, turn))
