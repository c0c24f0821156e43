"""``replay:PATH``: a scripted model for walkthroughs and tests. It is never presented as AI.

PATH is JSON ``{"responses": [R1, R2, ...]}``; each request consumes the next R:

    {"text": "...",                     # streamed word by word
     "tool_calls": [{"name": "tool", "arguments": {...} | "raw string", "call_id": "optional"}],
     "reasoning": "summary",            # optional
     "usage": {"input_tokens": 1, "output_tokens": 2},   # optional: else what a real
                                        # model would report (models/scripted_usage.py)
     "error": {"code": "server", "message": "..."}}      # optional: raise this ModelError

A request for a summary (compaction, ``purpose = "compact"``) takes the next string of an
optional top-level ``"summaries": ["...", ...]`` instead, so a script plays compaction offline;
without one left, the summary lists the user's requests so far.

Every key is optional. A raw-string ``arguments`` is passed through verbatim, so a script can
exercise malformed tool-call JSON.

A response may instead branch on what happened to the previous call, so a walkthrough never
claims what did not happen (docs/replay.md):

    {"branch": {"denied": R, "declined": R, "error": R, "default": R}}

The first key (in the file's order) naming an outcome of the previous call is played; then
``default``. Outcomes: ``approved``/``denied`` (the approval), ``accepted``/``declined``/
``cancelled`` (a question the server asked during the call), ``error`` (it failed), ``ok``
(it ran without error), ``none`` (there was no previous call).
"""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, get_args

from nbagent.models.base import (
    Completed,
    ModelError,
    ModelErrorCode,
    ModelEvent,
    ModelRequest,
    ReasoningDone,
    ReasoningSummaryDelta,
    TextDelta,
    ToolCallDone,
    Usage,
)
from nbagent.models.scripted_usage import ScriptedMeter, sent_chars
from nbagent.protocol import (
    DECISIONS_THAT_RUN,
    ApprovalRecord,
    ElicitationRecord,
    FunctionCall,
    FunctionCallOutput,
    UserMessage,
)

PREFIX = "replay:"
_RESPONSE_KEYS = {"text", "tool_calls", "reasoning", "usage", "error"}
OUTCOMES = ("approved", "denied", "accepted", "declined", "cancelled", "error", "ok", "none")
_BRANCH_KEYS = (*OUTCOMES, "default")
_ASKED = {"accept": "accepted", "decline": "declined", "cancel": "cancelled"}
_CALL_KEYS = {"name", "arguments", "call_id"}
_USAGE_KEYS = set(Usage.model_fields) - {"type"}
_ITEM_WORDS = ("text", "arguments", "output", "summary")
_WORDS = re.compile(r"\s*\S+\s*|\s+")


def words(text: str) -> list[str]:
    """Split into deltas that join back to exactly ``text``."""
    return _WORDS.findall(text)


def _bad(path: Path, key: str, problem: str) -> ModelError:
    return ModelError("bad_request", f"replay script {path}: key '{key}' {problem}")


def _check_response(path: Path, index: int, raw: Any, where: str | None = None) -> dict[str, Any]:
    where = where or f"responses[{index}]"
    if not isinstance(raw, dict):
        raise _bad(path, where, "must be an object like {\"text\": \"...\"}")
    if "branch" in raw:
        return _check_branch(path, index, raw, where)
    for key in raw:
        if key not in _RESPONSE_KEYS:
            raise _bad(path, f"{where}.{key}", f"is unknown (expected one of {', '.join(sorted(_RESPONSE_KEYS))})")
    for key in ("text", "reasoning"):
        if key in raw and not isinstance(raw[key], str):
            raise _bad(path, f"{where}.{key}", "must be a string")
    calls = raw.get("tool_calls", [])
    if not isinstance(calls, list):
        raise _bad(path, f"{where}.tool_calls", "must be a list")
    for n, call in enumerate(calls):
        at = f"{where}.tool_calls[{n}]"
        if not isinstance(call, dict):
            raise _bad(path, at, "must be an object like {\"name\": \"tool\", \"arguments\": {}}")
        for key in call:
            if key not in _CALL_KEYS:
                raise _bad(path, f"{at}.{key}", f"is unknown (expected one of {', '.join(sorted(_CALL_KEYS))})")
        if not isinstance(call.get("name"), str) or not call["name"]:
            raise _bad(path, f"{at}.name", "must be a non-empty string")
        if "arguments" in call and not isinstance(call["arguments"], dict | str):
            raise _bad(path, f"{at}.arguments", "must be an object or a string")
        if "call_id" in call and not isinstance(call["call_id"], str):
            raise _bad(path, f"{at}.call_id", "must be a string")
    usage = raw.get("usage")
    if usage is not None and (
        not isinstance(usage, dict)
        or any(k not in _USAGE_KEYS or not isinstance(v, int) for k, v in usage.items())
    ):
        raise _bad(path, f"{where}.usage", f"must map some of {', '.join(sorted(_USAGE_KEYS))} to integers")
    error = raw.get("error")
    if error is not None:
        if not isinstance(error, dict) or not isinstance(error.get("message", ""), str):
            raise _bad(path, f"{where}.error", "must be an object {\"code\": ..., \"message\": \"...\"}")
        if error.get("code", "other") not in get_args(ModelErrorCode):
            raise _bad(path, f"{where}.error.code", f"must be one of {', '.join(get_args(ModelErrorCode))}")
    return raw


def _check_branch(path: Path, index: int, raw: dict[str, Any], where: str) -> dict[str, Any]:
    if len(raw) != 1:
        others = sorted(set(raw) - {"branch"})
        raise _bad(path, f"{where}.{others[0]}", "cannot stand beside 'branch': put it in each branch's response")
    branches = raw["branch"]
    if not isinstance(branches, dict) or not branches:
        raise _bad(path, f"{where}.branch", "must be an object like {\"denied\": {...}, \"default\": {...}}")
    for key, response in branches.items():
        if key not in _BRANCH_KEYS:
            raise _bad(path, f"{where}.branch.{key}", f"is not an outcome (expected one of {', '.join(_BRANCH_KEYS)})")
        if isinstance(response, dict) and "branch" in response:
            raise _bad(path, f"{where}.branch.{key}.branch", "is not allowed: a branch holds a plain response")
        _check_response(path, index, response, f"{where}.branch.{key}")
    return raw


def previous_outcomes(items: list[Any]) -> set[str]:
    """What happened to the last call in ``items``: its approval, the answers to questions the
    server asked meanwhile (recorded after the call), and whether it failed."""
    last = next((n for n in range(len(items) - 1, -1, -1) if isinstance(items[n], FunctionCall)), None)
    if last is None:
        return {"none"}
    call_id = items[last].call_id
    outcomes: set[str] = set()
    for item in items[last + 1 :]:
        if isinstance(item, ApprovalRecord) and item.call_id == call_id:
            outcomes.add("approved" if item.decision in DECISIONS_THAT_RUN else "denied")
        elif isinstance(item, ElicitationRecord) and item.action in _ASKED:
            outcomes.add(_ASKED[item.action])
        elif isinstance(item, FunctionCallOutput) and item.call_id == call_id:
            if item.status == "denied":
                outcomes.add("denied")
            else:
                outcomes.add("error" if item.is_error or item.status != "completed" else "ok")
    return outcomes


def choose(path: Path, index: int, response: dict[str, Any], items: list[Any]) -> dict[str, Any]:
    """The response to play: itself, or the branch matching the previous call's outcome."""
    branches = response.get("branch")
    if branches is None:
        return response
    outcomes = previous_outcomes(items)
    for key, chosen in branches.items():
        if key in outcomes:
            return chosen
    if "default" in branches:
        return branches["default"]
    raise _bad(
        path, f"responses[{index}].branch",
        f"has no entry for what happened ({', '.join(sorted(outcomes))}) and no 'default'",
    )


def load_script(path: Path) -> Script:
    """Read and check a replay file; every problem names the file and the key."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ModelError(
            "bad_request", f"replay script {path} does not exist (check the path after 'replay:')"
        ) from None
    except OSError as exc:
        raise ModelError("bad_request", f"replay script {path}: cannot read: {exc.strerror}") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise ModelError("bad_request", f"replay script {path}: invalid JSON: {exc}") from None
    if not isinstance(data, dict) or "responses" not in data:
        raise _bad(path, "responses", "is missing: the file must be {\"responses\": [ ... ]}")
    if not isinstance(data["responses"], list):
        raise _bad(path, "responses", "must be a list of responses")
    extra = sorted(set(data) - {"responses", "summaries"})
    if extra:
        raise _bad(path, extra[0], "is unknown (only 'responses' and 'summaries' are allowed at the top level)")
    summaries = data.get("summaries", [])
    if not isinstance(summaries, list) or not all(isinstance(x, str) for x in summaries):
        raise _bad(path, "summaries", "must be a list of strings")
    return Script([_check_response(path, i, r) for i, r in enumerate(data["responses"])], summaries)


@dataclass
class Script:
    responses: list[dict[str, Any]]
    summaries: list[str]


def fallback_summary(items: list[Any]) -> str:
    asked = [item.text.splitlines()[0][:200] for item in items if isinstance(item, UserMessage) and item.text]
    return "The user asked, in order: " + "; ".join(asked[:-1] or asked) if asked else "Nothing happened yet."


def raw_arguments(call: dict[str, Any]) -> str:
    """A scripted call's arguments as the model sends them: a raw string verbatim, else JSON."""
    arguments = call.get("arguments", {})
    return arguments if isinstance(arguments, str) else json.dumps(arguments)


def _sent(request: ModelRequest) -> int:
    texts = [value for item in request.items for key in _ITEM_WORDS if isinstance(value := getattr(item, key, None), str)]
    return sent_chars(request.instructions, texts, [(tool.name, tool.description, tool.parameters) for tool in request.tools])


class ReplayModel:
    """Plays a script in order; the position belongs to this instance (one per session)."""

    scripted = True

    def __init__(self, path: str | Path, *, cwd: str | Path | None = None) -> None:
        path = Path(path).expanduser()
        if not path.is_absolute():
            path = Path(cwd or Path.cwd()) / path
        self.path = path
        self.label = f"scripted replay: {path.name}"
        self.position = 0
        self.summarised = 0
        self._script: Script | None = None
        self._meter = ScriptedMeter()

    def load(self) -> Script:
        """Read the file once (first request, or earlier to fail fast)."""
        if self._script is None:
            self._script = load_script(self.path)
        return self._script

    def stream(self, request: ModelRequest) -> AsyncIterator[ModelEvent]:
        return self._play(request)

    async def _play(self, request: ModelRequest) -> AsyncIterator[ModelEvent]:
        if request.purpose == "compact":
            summaries = self.load().summaries
            if self.summarised < len(summaries):
                summary = summaries[self.summarised]
                self.summarised += 1
            else:
                summary = fallback_summary(request.items)
            yield Completed(text=summary)
            return
        script = self.load().responses
        if self.position >= len(script):
            raise ModelError(
                "replay_exhausted",
                f"replay script {self.path} has no response left: it had {len(script)} response"
                f"{'s' if len(script) != 1 else ''} and all were used. Add more to its \"responses\" list.",
            )
        index = self.position
        self.position += 1
        response = choose(self.path, index, script[index], request.items)
        if error := response.get("error"):
            raise ModelError(error.get("code", "other"), error.get("message") or "scripted error")
        if reasoning := response.get("reasoning"):
            for part in words(reasoning):
                yield ReasoningSummaryDelta(delta=part)
            yield ReasoningDone(summary=reasoning)
        text = response.get("text", "")
        for part in words(text):
            yield TextDelta(delta=part)
        for n, call in enumerate(response.get("tool_calls", []), start=1):
            call_id = call.get("call_id") or f"call_replay_{index + 1}_{n}"
            yield ToolCallDone(call_id=call_id, name=call["name"], arguments=raw_arguments(call))
        said = text + "".join(call["name"] + raw_arguments(call) for call in response.get("tool_calls", []))
        yield Usage(**(response.get("usage") or self._meter.usage(_sent(request), said, reasoning or "")))
        yield Completed(text=text)

    async def aclose(self) -> None:
        return None
