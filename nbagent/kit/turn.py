"""One turn as every front end shows it, folded from its events: no widget, no terminal.

``TurnModel.apply(event)`` folds one event into the model and returns what changed (one of the
``Change`` types below, or ``None`` when nothing shown changed). Each front end (the widgets, the
text view, ``nbagent run``, an MCP caller's progress) draws the changes it is handed and keeps
only its own drawing state; what a call is, how far it got, who decided its approval and how the
turn ended is decided here once. A new kind of card is one part and one change here plus one
drawing per front end.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal, NotRequired, TypedDict

from nbagent.kit.labels import model_text, policy_text
from nbagent.patch.diff import line_counts
from nbagent.protocol import (
    DECISIONS_THAT_RUN,
    AgentMessage,
    AgentMessageDelta,
    ApprovalRequested,
    ApprovalResolved,
    ContextCompacted,
    ElicitationRequested,
    ElicitationResolved,
    ErrorEvent,
    Event,
    ExecCommandOutputDelta,
    McpLog,
    McpLoginCompleted,
    McpLoginRequired,
    McpStartupComplete,
    McpStartupUpdate,
    McpToolsChanged,
    PatchApplyBegin,
    PatchApplyEnd,
    PatchChange,
    Progress,
    Reasoning,
    ReasoningDelta,
    SandboxDenied,
    SessionConfigured,
    TokenCount,
    TokenUsage,
    ToolCallBegin,
    ToolCallEnd,
    TurnAborted,
    TurnCompleted,
    TurnFailed,
    TurnStarted,
    WarningEvent,
)
from nbagent.textsafe import one_line

# -- the header ------------------------------------------------------------------------------


class Header(TypedDict):
    """What a turn runs with, as its display names it (a scripted model is labelled so)."""

    model_label: str
    scripted: bool
    thread: str
    policy: str
    context: NotRequired[bool]
    """The model sees a summary of the notebook and its names (``%agent context on``)."""


@dataclass(frozen=True)
class HeaderText:
    """The header's words, one per field, as every notebook display shows them."""

    model: str
    thread: str
    policy: str
    context: str | None
    loud: bool
    """The policy runs every call without asking: shown as an alarm, not a detail."""

    def parts(self) -> list[str]:
        return [self.model, self.thread, self.policy, *([self.context] if self.context else [])]


def usage_text(usage: TokenUsage, thread: TokenUsage | None = None) -> str:
    """A turn's tokens as every front end shows them beside its header, with the thread's total
    when earlier turns add to it."""
    cached = f" ({usage.cached_input_tokens:,} cached)" if usage.cached_input_tokens else ""
    reasoning = f" ({usage.reasoning_output_tokens:,} reasoning)" if usage.reasoning_output_tokens else ""
    text = f"tokens: {usage.input_tokens:,} in{cached}, {usage.output_tokens:,} out{reasoning}"
    if thread is not None and thread.total_tokens > usage.total_tokens:
        text += f"; {thread.total_tokens:,} in the thread"
    return text


def header_text(header: Header) -> HeaderText:
    return HeaderText(
        model=model_text(header["model_label"], header["scripted"]),
        thread=f"thread {one_line(header['thread'])}",
        policy=f"policy {policy_text(header['policy'])}",
        context="notebook context on" if header.get("context") else None,
        loud=header["policy"] == "full-auto",
    )


# -- the parts -------------------------------------------------------------------------------


@dataclass
class Text:
    """An agent message or a reasoning item: the streamed deltas joined, then the final text.
    Deltas are kept as pieces and joined when read, so a long stream costs linear time."""

    item_id: str
    done: bool = False
    _pieces: list[str] = field(default_factory=list, repr=False)

    @property
    def text(self) -> str:
        if len(self._pieces) > 1:
            self._pieces[:] = ["".join(self._pieces)]
        return self._pieces[0] if self._pieces else ""

    def append(self, delta: str) -> None:
        self._pieces.append(delta)

    def finish(self, text: str) -> None:
        self._pieces[:] = [text]
        self.done = True


@dataclass
class Step:
    """How far a call has got, as its server last said."""

    progress: float
    total: float | None = None
    message: str | None = None


@dataclass
class Approval:
    """A call's approval: what was asked (``None`` when it was decided without asking) and the
    decision, with who or what made it (``None`` until it is made)."""

    ask: ApprovalRequested | None = None
    answer: ApprovalResolved | None = None

    @property
    def decided(self) -> bool:
        return self.answer is not None

    @property
    def runs(self) -> bool:
        return self.answer is not None and self.answer.decision in DECISIONS_THAT_RUN


@dataclass
class Question:
    """A server's question (elicitation) and its answer, with who or what gave it."""

    request_id: str
    ask: ElicitationRequested | None = None
    """``None`` for a question settled before this model saw it asked."""
    answer: ElicitationResolved | None = None

    @property
    def call_id(self) -> str | None:
        return self.ask.call_id if self.ask is not None else None

    @property
    def answered(self) -> bool:
        return self.answer is not None


CardStatus = Literal["running", "awaiting", "completed", "failed", "denied", "aborted"]


@dataclass
class Card:
    """One tool call, by call id: who is called with what, how far along, its asks, its outcome."""

    call_id: str
    tool: str
    """The model-visible name."""
    server: str | None = None
    raw_tool: str | None = None
    title: str | None = None
    arguments: dict[str, Any] | None = None
    """Parsed arguments; ``None`` when the model sent malformed JSON (``raw_arguments``)."""
    raw_arguments: str = ""
    begun: bool = False
    """False while only its approval, its outcome or a question about it has been seen."""
    status: CardStatus = "running"
    progress: Step | None = None
    output: Text | None = None
    """What the call's command wrote so far, both streams in the order they came (``shell``)."""
    approval: Approval | None = None
    questions: list[Question] = field(default_factory=list)
    end: ToolCallEnd | None = None
    changes: list[PatchChange] = field(default_factory=list)
    """The files a patch it applies changes (``apply_patch``), from before they are written."""
    applied: bool | None = None
    """Whether those changes were written; ``None`` until the patch says."""
    denied: SandboxDenied | None = None
    """What the sandbox refused the call's command, when its output says so (``shell``)."""

    @property
    def label(self) -> str:
        return tool_label(self.tool, self.server, self.raw_tool, self.title)


def tool_label(tool: str, server: str | None, raw_tool: str | None, title: str | None) -> str:
    """``Title — server · raw_name`` in plain text."""
    raw = f"{server} · {raw_tool or tool}" if server else (raw_tool or tool)
    return f"{title} — {raw}" if title and title != (raw_tool or tool) else raw


@dataclass
class Server:
    """An MCP server's startup state, as the session last reported it."""

    name: str
    status: str
    error: str | None = None
    tools: int = 0


@dataclass
class Login:
    """A server that asked the person to sign in: the link, then whether it completed."""

    server: str
    url: str | None = None
    done: bool = False


@dataclass
class Ending:
    """How the turn ended: exactly one per turn, its last event."""

    status: Literal["completed", "aborted", "failed"]
    reason: str = ""
    """The abort's reason or the failure's message; the last message when completed."""
    code: str | None = None
    """A failure's stable kind (``auth``, ``config``...)."""


# -- what changed ----------------------------------------------------------------------------


@dataclass(frozen=True)
class Configured:
    header: Header


@dataclass(frozen=True)
class Started:
    model: str
    turn_id: str | None


@dataclass(frozen=True)
class MessageChanged:
    """``delta`` is what was appended; ``""`` with ``message.done`` for the final text."""

    message: Text
    delta: str


@dataclass(frozen=True)
class ReasoningChanged:
    reasoning: Text
    delta: str


CardPart = Literal["begun", "progress", "output", "asked", "decided", "changes", "sandbox_denied", "ended"]


@dataclass(frozen=True)
class CardChanged:
    card: Card
    part: CardPart
    delta: str = ""
    """For ``output``: what was appended to ``card.output``."""


@dataclass(frozen=True)
class QuestionChanged:
    question: Question
    card: Card | None
    """The call during which the server asked, when known and seen."""


@dataclass(frozen=True)
class ServerChanged:
    server: Server


@dataclass(frozen=True)
class ServersStarted:
    ready: list[str]
    failed: list[str]


@dataclass(frozen=True)
class ToolsChanged:
    server: str
    tools: int


@dataclass(frozen=True)
class ServerLogged:
    server: str
    level: str
    data: Any


@dataclass(frozen=True)
class LoginChanged:
    login: Login


@dataclass(frozen=True)
class Warned:
    message: str


@dataclass(frozen=True)
class Failed:
    """A problem that ends no turn."""

    message: str
    code: str


@dataclass(frozen=True)
class Compacted:
    compaction: ContextCompacted


@dataclass(frozen=True)
class UsageChanged:
    usage: TokenUsage
    """The turn's tokens so far (every request of it)."""
    thread: TokenUsage
    """The thread's, this turn included."""

    @property
    def text(self) -> str:
        return usage_text(self.usage, self.thread)


@dataclass(frozen=True)
class Ended:
    ending: Ending


Change = (
    Configured | Started | MessageChanged | ReasoningChanged | CardChanged | QuestionChanged | ServerChanged
    | ServersStarted | ToolsChanged | ServerLogged | LoginChanged | Warned | Failed | Compacted | UsageChanged | Ended
)  # fmt: skip


# -- the model -------------------------------------------------------------------------------


@dataclass
class TurnModel:
    """A turn (or, for a view of outside calls, several) as folded from its events, in order."""

    header: Header | None = None
    messages: dict[str, Text] = field(default_factory=dict)
    reasoning: dict[str, Text] = field(default_factory=dict)
    cards: dict[str, Card] = field(default_factory=dict)
    questions: dict[str, Question] = field(default_factory=dict)
    servers: dict[str, Server] = field(default_factory=dict)
    logins: dict[str, Login] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    errors: list[Failed] = field(default_factory=list)
    compactions: list[ContextCompacted] = field(default_factory=list)
    usage: TokenUsage | None = None
    """The tokens of the turn's model requests so far, summed from its ``token_count`` events."""
    thread_usage: TokenUsage | None = None
    ending: Ending | None = None

    @property
    def done(self) -> bool:
        return self.ending is not None

    def card(self, call_id: str, tool: str = "") -> Card:
        """The call's card, made (not yet begun) when this is the first this model hears of it."""
        card = self.cards.get(call_id)
        if card is None:
            card = self.cards[call_id] = Card(call_id=call_id, tool=tool)
        card.tool = card.tool or tool
        return card

    def apply(self, event: Event) -> Change | None:
        """Fold one event in; what changed, or ``None`` when it changes nothing shown."""
        match event.msg:
            case SessionConfigured() as e:
                self.header = Header(model_label=e.model_label, scripted=e.scripted, thread=event.thread_id, policy=e.policy)
                return Configured(self.header)
            case TurnStarted() as e:
                self.ending = self.usage = None
                return Started(e.model, event.turn_id)
            case AgentMessageDelta() | AgentMessage() as e:
                text = self.messages.setdefault(e.item_id, Text(e.item_id))
                return MessageChanged(text, _fold(text, e))
            case ReasoningDelta() | Reasoning() as e:
                text = self.reasoning.setdefault(e.item_id, Text(e.item_id))
                return ReasoningChanged(text, _fold(text, e))
            case ToolCallBegin() as e:
                card = self.card(e.call_id)
                card.tool, card.server, card.raw_tool, card.title = e.tool, e.server, e.raw_tool, e.title
                card.arguments, card.raw_arguments, card.begun = e.arguments, e.raw_arguments, True
                return CardChanged(card, "begun")
            case Progress() as e:
                card = self.card(e.call_id)
                card.progress = Step(e.progress, e.total, e.message)
                return CardChanged(card, "progress")
            case ExecCommandOutputDelta() as e:
                card = self.card(e.call_id)
                card.output = card.output or Text(e.call_id)
                card.output.append(e.chunk)
                return CardChanged(card, "output", e.chunk)
            case PatchApplyBegin() | PatchApplyEnd() as e:
                card = self.card(e.call_id)
                card.changes = list(e.changes)
                card.applied = e.success if isinstance(e, PatchApplyEnd) else None
                return CardChanged(card, "changes")
            case SandboxDenied() as e:
                card = self.card(e.call_id, e.tool)
                card.denied = e
                return CardChanged(card, "sandbox_denied")
            case ToolCallEnd() as e:
                card = self.card(e.call_id, e.tool)
                card.end = e
                card.status = "failed" if e.is_error and e.status == "completed" else e.status
                return CardChanged(card, "ended")
            case ApprovalRequested() as e:
                card = self.card(e.call_id, e.tool)
                if not card.begun:  # the ask names the call as its begin would have
                    card.server, card.raw_tool, card.title, card.arguments = e.server, e.raw_tool, e.title, e.arguments
                card.approval = Approval(ask=e)
                card.status = "awaiting"
                return CardChanged(card, "asked")
            case ApprovalResolved() as e:
                card = self.card(e.call_id)
                approval = card.approval = card.approval or Approval()
                approval.answer = e
                if card.status == "awaiting":
                    card.status = "running" if approval.runs else "denied"
                return CardChanged(card, "decided")
            case ElicitationRequested() as e:
                question = self.questions[e.request_id] = Question(e.request_id, ask=e)
                return QuestionChanged(question, self._asked_in(question))
            case ElicitationResolved() as e:
                question = self.questions.setdefault(e.request_id, Question(e.request_id))
                question.answer = e
                return QuestionChanged(question, self.cards.get(question.call_id or ""))
            case McpStartupUpdate() as e:
                server = self.servers[e.server] = Server(e.server, e.status, e.error, e.tools)
                return ServerChanged(server)
            case McpStartupComplete() as e:
                return ServersStarted(e.ready, e.failed)
            case McpToolsChanged() as e:
                return ToolsChanged(e.server, e.tools)
            case McpLog() as e:
                return ServerLogged(e.server, e.level, e.data)
            case McpLoginRequired() as e:
                login = self.logins[e.server] = Login(e.server, e.url)
                return LoginChanged(login)
            case McpLoginCompleted() as e:
                login = self.logins.setdefault(e.server, Login(e.server))
                login.done = True
                return LoginChanged(login)
            case WarningEvent() as e:
                self.warnings.append(e.message)
                return Warned(e.message)
            case ErrorEvent() as e:
                failed = Failed(e.message, e.code)
                self.errors.append(failed)
                return failed
            case ContextCompacted() as e:
                self.compactions.append(e)
                return Compacted(e)
            case TokenCount(info=info) if info is not None:
                self.usage = (self.usage or TokenUsage()) + info.last_token_usage
                self.thread_usage = info.total_token_usage
                return UsageChanged(self.usage, self.thread_usage)
            case TurnCompleted() as e:
                return self._end(Ending("completed", e.last_message))
            case TurnAborted() as e:
                return self._end(Ending("aborted", e.reason))
            case TurnFailed() as e:
                return self._end(Ending("failed", e.message, e.code))
        return None

    def _asked_in(self, question: Question) -> Card | None:
        card = self.cards.get(question.call_id or "")
        if card is not None:
            card.questions.append(question)
        return card

    def _end(self, ending: Ending) -> Ended:
        self.ending = ending
        return Ended(ending)


_MARKS = {"add": "A", "update": "M", "move": "R", "delete": "D"}


def change_lines(card: Card) -> list[str]:
    """One line per file a call's patch changes, as every front end shows it:
    ``M src/app.py +3 −1``, ``R old.py → new.py +0 −0``."""
    return [change_line(change) for change in card.changes]


def change_line(change: PatchChange) -> str:
    """One file's (or cell's) change in one line: what happens to it and the lines it adds and removes."""
    added, removed = line_counts(change.unified_diff)
    moved = f" → {one_line(change.move_path)}" if change.move_path else ""
    return f"{_MARKS[change.kind]} {one_line(change.path)}{moved} +{added} −{removed}"


def denial_line(card: Card) -> str:
    """What the sandbox refused a call, as every front end shows it."""
    denied = card.denied
    return f"sandbox ({denied.sandbox}) denied: {one_line(denied.denied)}" if denied is not None else ""


def _fold(text: Text, event: AgentMessageDelta | AgentMessage | ReasoningDelta | Reasoning) -> str:
    """Append a delta (returned) or set the final text (``""`` returned)."""
    if isinstance(event, AgentMessageDelta | ReasoningDelta):
        text.append(event.delta)
        return event.delta
    text.finish(event.text)
    return ""
