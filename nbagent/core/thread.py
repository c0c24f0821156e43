"""``ThreadState``: the session's current thread, its items and the rollout writer that keeps them.

Every item a turn makes goes through ``record`` (disk first, then memory), so history never
holds what the disk could not. Switching threads (new, resume) is the only way the writer
changes; a running turn forbids it, since its items belong to the thread it started on. A new
thread has its id at once but its rollout only with its first line past the first (a turn's
start, an outside call): a session that never ran a turn leaves no empty thread behind.
"""

from __future__ import annotations

from collections.abc import Callable

from nbagent.config import Config
from nbagent.core.bus import EventBus
from nbagent.core.context import ContextView
from nbagent.core.thread_settings import remembered
from nbagent.mcp.wire import secret_sources
from nbagent.protocol import (
    FunctionCall,
    Item,
    ItemRecord,
    NameRecord,
    RolloutLine,
    ThreadMeta,
    TokenUsage,
    ToolSpec,
    TurnRecord,
    WarningEvent,
    new_id,
)
from nbagent.secrets import ProviderRedaction, Redactor, process_secrets
from nbagent.store import (
    RolloutWriteError,
    RolloutWriter,
    ThreadStore,
    ThreadSummary,
    repair_open_calls,
    without_orphan_outputs,
)


def rollout_secrets(config: Config) -> list[str]:
    """What the rollout redacts: values that are secrets by what they are (API keys, bearer
    tokens, header values) or by their name (``*TOKEN*``...), in the config or this process's
    environment. A server's other settings (``NODE_ENV = "production"``) are history."""
    return list(secret_sources(config, config.mcp_servers))


def redactor_for(config: Config) -> Redactor:
    """The rollout's rule over ``config`` as it is now, for views with no thread open (``nbagent
    inspect tools``, events before the first thread)."""
    return Redactor([*rollout_secrets(config), *process_secrets()])


class ThreadState:
    """The current thread: ``id``, ``name``, ``items`` and its writer; ``new``/``resume``/``rename``.

    ``busy`` says whether a turn runs (then switching is refused); ``announce(resumed_items)``
    tells the front ends the thread changed (``session_configured``) before any repair of it is
    recorded, so a resumed thread's warnings and repairs follow its announcement."""

    def __init__(
        self,
        store: ThreadStore,
        config: Config,
        bus: EventBus,
        *,
        cwd: str,
        notebook_path: str | None,
        busy: Callable[[], bool],
        announce: Callable[[int], object],
    ) -> None:
        self._store = store
        self._config = config
        self._bus = bus
        self._cwd = cwd
        self._notebook_path = notebook_path
        self._busy = busy
        self._announce = announce
        self._writer: RolloutWriter | None = None
        self.id = ""
        self.name: str | None = None
        self.items: list[Item] = []
        self.call_ids: set[str] = set()
        """Every function-call id of the thread."""
        self.usage = TokenUsage()
        """The tokens of every turn of the thread, resumed ones included."""
        self.context = ContextView()
        """What of ``items`` the model sees (it follows ``items`` as they grow or are replaced)."""
        self._provider = ProviderRedaction()

    # -- the rollout -----------------------------------------------------------------------

    def record(self, item: Item) -> None:
        """Write ``item``, then keep it as written: a secret a server echoed or the model repeated
        is gone from the history the model is sent next, as from a resumed thread's."""
        written = self.write(ItemRecord(item=item))  # first: history never holds what the disk could not
        if isinstance(written, ItemRecord):
            item = written.item
        self.items.append(item)
        if isinstance(item, FunctionCall):
            self.call_ids.add(item.call_id)

    def write(self, line: RolloutLine) -> RolloutLine:
        """``line`` written to the rollout, as written (redacted); a new thread's first line
        creates its rollout."""
        if self._writer is None and self.id:
            self._writer = self._create()
        return self._writer.append(line) if self._writer is not None else line

    @property
    def stored(self) -> bool:
        """Whether the thread has a rollout (a new one has none until its first turn)."""
        return self._writer is not None

    def _create(self) -> RolloutWriter:
        meta = ThreadMeta(
            thread_id=self.id, name=self.name, cwd=self._cwd, notebook_path=self._notebook_path,
            **remembered(self._config),
        )
        try:
            return self._store.create(meta, secrets=rollout_secrets(self._config))
        except RolloutWriteError:
            raise
        except OSError as exc:  # the file could not be opened: a turn ends on it as on a full disk
            raise RolloutWriteError(self._store.path_for(self.id), exc) from None

    def close(self) -> None:
        if self._writer is not None:
            self._writer.close()

    # -- saved threads ---------------------------------------------------------------------

    def find(self, id_or_name: str) -> str | None:
        """The id of the saved thread with this id or name, if there is one."""
        return self._store.resolve(id_or_name)

    def saved(self, limit: int | None = 50) -> list[ThreadSummary]:
        """Saved threads, most recently updated first (``limit`` None: all of them)."""
        return self._store.list_threads(limit=limit)

    # -- switching -------------------------------------------------------------------------

    def _switch(self, thread_id: str) -> None:
        if self._busy():
            raise RuntimeError("cannot switch threads while a turn is running; interrupt it first")
        self.close()
        self.id = thread_id
        self._bus.thread_id = thread_id

    async def new(self, name: str | None = None) -> str:
        """Start a new thread; returns its id. Its rollout is written from its first turn on."""
        thread_id = new_id("thread")
        self._switch(thread_id)
        self._writer = None
        self.name = name
        self.items = []
        self.call_ids = set()
        self.usage = TokenUsage()
        self._announce(0)
        return thread_id

    async def resume(self, id_or_name: str, adopt: Callable[[ThreadMeta], None] | None = None) -> str:
        """Continue a saved thread: its calls left open get an output, its open turn an end.
        ``adopt`` is handed its first line before the thread is announced."""
        thread_id = self.find(id_or_name)
        if thread_id is None:
            raise KeyError(f"no thread with id or name {id_or_name!r} under {self._config.home_path}")
        if thread_id == self.id:
            self._switch(thread_id)  # this session's own writer holds the thread's lock
        # Another process writing the thread is waited for (a few seconds at most), then refused.
        loaded, writer = self._store.open_thread(thread_id, rollout_secrets(self._config))
        try:
            self._switch(thread_id)
        except RuntimeError:
            writer.close()
            raise
        self._writer = writer
        self.name = loaded.name
        self.items, orphans = without_orphan_outputs(loaded.items)
        self.call_ids = {item.call_id for item in self.items if isinstance(item, FunctionCall)}
        self.usage = sum((t.usage for t in loaded.turns if t.usage is not None), TokenUsage())
        if adopt is not None:
            adopt(loaded.meta)
        self._announce(len(self.items))
        for warning in loaded.warnings:
            self._bus.emit(WarningEvent(message=warning))
        for output in orphans:
            self._bus.emit(WarningEvent(message=(
                f"{loaded.path}: the output of call {output.call_id!r} follows no call of that id (its line was "
                "lost); the model is not sent it, the rollout keeps it"
            )))
        for output in repair_open_calls(self.items):
            self.record(output)
        if loaded.open_turn_id is not None:
            reason = "the process ended during this turn"
            self.write(TurnRecord(turn_id=loaded.open_turn_id, status="aborted", reason=reason))
        return thread_id

    def rename(self, name: str) -> None:
        self.name = name
        if self.stored:  # else the first line carries it
            self.write(NameRecord(name=name))

    def refresh_secrets(self) -> None:
        """Take in the secrets that appeared since the thread opened (``os.environ["X_TOKEN"]``
        set in a cell): each turn does, as it starts, so its rollout, cell and views hide them."""
        if self._writer is not None:
            self._writer.add_secrets(rollout_secrets(self._config))

    def redactor(self) -> Redactor:
        """What this thread's rollout hides, as its writer keeps it (the thread's secrets from
        when it was opened, and the process's, live): the cell's outputs and the inspect views
        are redacted by this same one, so every view of the thread hides the same values."""
        return self._writer.redactor if self._writer is not None else redactor_for(self._config)

    def for_provider(self, instructions: str, tools: list[ToolSpec]) -> tuple[str, list[ToolSpec]]:
        """A model request's instructions and tools as the provider is sent them: hiding what
        this thread's rollout hides, as the history the request carries does. A tool's spec is
        redacted once per secret set, not on every request."""
        return self._provider.for_provider(instructions, tools, self.redactor())
