"""A call's ``undo`` record is read back from the rollout, a file anyone may edit: what is not of
its shape (wrong types, huge values, missing keys, junk items) is left out, item by item, and the
rest still puts the cell back; nothing raises, so the undo goes on."""

from __future__ import annotations

from typing import Any

from nbagent.checkpoint.outputs import restorable
from nbagent.protocol.bridge import Provenance

STREAM = {"output_type": "stream", "name": "stdout", "text": ["a\n", "b\n"]}
PNG = {"output_type": "display_data", "metadata": {}, "data": {"image/png": "iVBOR", "text/plain": ["<Fig", "ure>"]}}
PROVENANCE = {"thread_id": "thr", "turn_id": "t1", "call_id": "call_2"}
GOOD = {"outputs": [STREAM, PNG], "execution_count": 3, "outputs_not_kept": 1, "not_kept": ["attachments"],
        "metadata": {"tags": ["x"], "trusted": True}, "attachments": {"f.png": {"image/png": "iVBOR"}},
        "provenance": PROVENANCE, "unknown": "ignored"}  # fmt: skip


def fields(kept: Any, cell_type: str = "code") -> dict[str, Any]:
    r = restorable(kept, cell_type)
    return {"outputs": list(r.outputs), "execution_count": r.execution_count, "outputs_not_kept": r.outputs_not_kept,
            "metadata": r.metadata, "attachments": r.attachments, "not_kept": list(r.not_kept),
            "provenance": r.provenance, "restores_provenance": r.restores_provenance}  # fmt: skip


NOTHING = {"outputs": [], "execution_count": None, "outputs_not_kept": 0, "metadata": {}, "attachments": None,
           "not_kept": [], "provenance": None, "restores_provenance": False}  # fmt: skip


def test_a_good_record_puts_back_what_it_holds_for_its_cell_type() -> None:
    code = fields(GOOD)
    assert code["outputs"] == [{**STREAM, "text": "a\nb\n"}, {**PNG, "data": {"image/png": "iVBOR", "text/plain": "<Figure>"}}]
    assert (code["execution_count"], code["outputs_not_kept"], code["not_kept"]) == (3, 1, ["attachments"])
    assert code["metadata"] == {"tags": ["x"]} and code["attachments"] is None  # never trusted; a code cell has none
    assert code["provenance"] == Provenance(**PROVENANCE) and code["restores_provenance"]
    markdown = fields(GOOD, "markdown")
    assert (markdown["outputs"], markdown["execution_count"]) == ([], None)
    assert markdown["attachments"] == GOOD["attachments"]


def test_missing_keys_or_no_record_put_back_nothing_and_leave_the_provenance() -> None:
    for kept in (None, {}, "junk", ["outputs"], 5):
        assert fields(kept) == NOTHING, kept


def test_wrong_types_are_left_out_one_by_one() -> None:
    bad = {"outputs": "junk", "execution_count": "3", "outputs_not_kept": True, "metadata": ["trusted"],
           "attachments": ["junk"], "not_kept": "metadata", "provenance": {"call_id": 5}}  # fmt: skip
    assert fields(bad) == {**NOTHING, "restores_provenance": True}  # a forged provenance is removed, not written
    assert fields(bad, "raw") == {**NOTHING, "restores_provenance": True}
    for count in (True, 3.0, -1, [3], {"n": 3}):
        wrong = fields({"execution_count": count, "outputs_not_kept": count})
        assert (wrong["execution_count"], wrong["outputs_not_kept"]) == (None, 0), count
    assert fields({"outputs_not_kept": 0})["outputs_not_kept"] == 0
    junk: list[Any] = [5, None, "x", [STREAM], {"output_type": "bogus"}, {"text": "no type"}, {"output_type": 1}]
    assert fields({"outputs": [*junk, STREAM]})["outputs"] == [{**STREAM, "text": "a\nb\n"}]
    assert fields({"not_kept": [1, None, "metadata", "outputs", "trusted", ["attachments"]]})["not_kept"] == ["metadata"]
    odd = {"output_type": "stream", "text": ["a", 1], "data": "not a bundle"}  # kept as it is: the bridge checks it
    assert fields({"outputs": [odd]})["outputs"] == [odd]
    assert fields({"metadata": {1: "x", "trusted": False, "a": None}})["metadata"] == {"a": None}
    assert fields({"provenance": None}) == {**NOTHING, "restores_provenance": True}
    assert fields({"restores_provenance": True}) == NOTHING  # said only by naming the provenance


def test_huge_values_are_taken_as_they_are() -> None:
    big = 10**40
    assert fields({"execution_count": big, "outputs_not_kept": big})["execution_count"] == big
    text = "x" * 2_000_000
    kept = fields({"outputs": [{"output_type": "stream", "name": "stdout", "text": text}] * 50, "metadata": {"t": text}})
    assert len(kept["outputs"]) == 50 and kept["metadata"] == {"t": text}
