"""The streaming redactor: a stream of fragments shown as it comes is redacted exactly as its whole
text is, holds back only a tail that may still begin a secret, and loses nothing."""

from __future__ import annotations

import random

from nbagent.protocol import AgentMessage, AgentMessageDelta, Event, Reasoning, ReasoningDelta, TurnAborted
from nbagent.secrets import DeltaRedactor, Redactor, StreamRedactor

KEY = "sk-test-0123456789abcdef"
OTHER = "sk-test-0123-other-tok"
SHORT = "sk-test-0123"
"""Three secrets sharing a prefix; the shortest is the start of both others."""


def stream(redactor: Redactor, *fragments: str) -> list[str]:
    """What each fragment releases, then what the end releases."""
    text = StreamRedactor()
    return [*(text.feed(f, redactor) for f in fragments), text.end(redactor)]


def test_text_that_cannot_begin_a_secret_passes_at_once() -> None:
    redactor = Redactor([KEY])
    assert stream(redactor, "hello ", "world, ", "see sk-", "x") == ["hello ", "world, ", "see ", "sk-x", ""]
    assert stream(Redactor(), "no secrets at all: sk-te") == ["no secrets at all: sk-te", ""]


def test_a_secret_split_over_three_fragments_is_released_redacted() -> None:
    assert stream(Redactor([KEY]), "the key sk-te", "st-0123", "456789abcdef, ok") == ["the key ", "", "[redacted], ok", ""]


def test_the_longest_of_secrets_sharing_a_prefix_wins() -> None:
    redactor = Redactor([KEY, OTHER, SHORT])
    assert "".join(stream(redactor, "a sk-test-01", "23", "456789abcdef b")) == "a [redacted] b"
    assert stream(redactor, "a sk-test-01", "23", "-other-tok b") == ["a ", "", "[redacted] b", ""]
    assert stream(redactor, "a sk-test-0123", " b") == ["a ", "[redacted] b", ""]
    assert stream(redactor, "a sk-test-0123", "-oth") == ["a ", "", "[redacted]-oth"]  # ends as the short one


def test_a_stream_that_ends_mid_prefix_gives_the_prefix_back() -> None:
    assert stream(Redactor([KEY]), "cut at sk-test-01") == ["cut at ", "sk-test-01"]


def test_a_secret_inside_the_held_tail_of_an_overlapping_one_is_still_found() -> None:
    """``abcdefgh`` ends where ``fghijklmnop`` could begin: the first is redacted whole, never cut
    at the second's start."""
    redactor = Redactor(["abcdefgh", "fghijklmnop"])
    assert "".join(stream(redactor, "xabcdefghij", "y")) == "x[redacted]ijy"
    assert "".join(stream(redactor, "xabcdefghijklmnop")) == "x[redacted]ijklmnop"
    assert "".join(stream(redactor, "xabcde", "fghijklmnop")) == "x[redacted]ijklmnop"


def test_any_split_shows_what_the_whole_text_redacted_shows_and_holds_little() -> None:
    secrets = [KEY, OTHER, SHORT, 'quo"ted-secret', "ünïcode-secret"]
    redactor = Redactor(secrets)
    longest = len(redactor._ordered[0])  # its longest form: the bound the stream keeps to
    pieces = [*secrets, "sk-", "sk-test-", "0123", " and ", "x", "\\", '"', "ünï"]
    rng = random.Random(7)
    for _ in range(500):
        whole = "".join(rng.choice(pieces) for _ in range(rng.randint(1, 12)))
        cuts = sorted(rng.sample(range(len(whole) + 1), min(len(whole) + 1, rng.randint(0, 6))))
        fragments = [whole[a:b] for a, b in zip([0, *cuts], [*cuts, len(whole)], strict=True)]
        text, shown = StreamRedactor(), ""
        for fragment in fragments:
            shown += text.feed(fragment, redactor)
            assert not any(s in shown for s in secrets), (fragments, shown)
            assert len(text._held) < longest
        assert shown + text.end(redactor) == redactor.text(whole), fragments


def _event(msg: object, seq: int, turn: str = "turn_1") -> Event:
    return Event.wrap(msg, seq=seq, turn_id=turn)  # type: ignore[arg-type]


def test_each_item_streams_on_its_own_and_ends_with_its_done_event_or_the_turn() -> None:
    streams = DeltaRedactor(lambda: Redactor([KEY]))
    shown: list[Event] = []
    for seq, msg in enumerate([
        ReasoningDelta(item_id="r", delta="think sk-te"),
        AgentMessageDelta(item_id="m", delta="say sk-test-0123"),
        ReasoningDelta(item_id="r", delta="st-0123456789abcdef."),
        AgentMessage(item_id="m", text="say sk-test-0123"),
        AgentMessageDelta(item_id="m2", delta="and sk-"),
        TurnAborted(reason="stopped"),
    ], start=1):  # fmt: skip
        shown += streams(_event(msg, seq))
    assert [(e.seq, e.msg.type, getattr(e.msg, "item_id", None), getattr(e.msg, "delta", None)) for e in shown] == [
        (1, "reasoning_delta", "r", "think "),
        (2, "agent_message_delta", "m", "say "),
        (3, "reasoning_delta", "r", "[redacted]."),
        (4, "agent_message_delta", "m", "sk-test-0123"),  # its tail, on the envelope of the event that ends it
        (4, "agent_message", "m", None),
        (5, "agent_message_delta", "m2", "and "),
        (6, "agent_message_delta", "m2", "sk-"),
        (6, "turn_aborted", None, None),
    ]
    done = _event(Reasoning(item_id="r", text="think [redacted]."), 7)
    assert streams(done) == [done]  # nothing was held: the done event alone


def test_a_turns_end_ends_only_that_turns_streams() -> None:
    streams = DeltaRedactor(lambda: Redactor([KEY]))
    assert streams(_event(AgentMessageDelta(item_id="a", delta="sk-te"), 1, turn="t1")) == []
    assert streams(_event(AgentMessageDelta(item_id="b", delta="sk-"), 2, turn="t2")) == []
    ended = streams(_event(TurnAborted(reason="stopped"), 3, turn="t1"))
    assert [getattr(e.msg, "delta", e.msg.type) for e in ended] == ["sk-te", "turn_aborted"]
    assert [e.msg.delta for e in streams(_event(AgentMessageDelta(item_id="b", delta="x"), 4, turn="t2"))] == ["sk-x"]
