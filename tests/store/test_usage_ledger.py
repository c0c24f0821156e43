"""The day's token ledger: two processes adding at once lose nothing; a file that is not a
day's counts (or a link) is an error naming it, never read as zero."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from nbagent.protocol import TokenUsage
from nbagent.store.usage import LedgerError, UsageLedger, utc_day

ONE = TokenUsage(input_tokens=3, cached_input_tokens=1, output_tokens=2, reasoning_output_tokens=1, total_tokens=5)
ADDER = """
import sys
from nbagent.protocol import TokenUsage
from nbagent.store.usage import UsageLedger
ledger, one = UsageLedger(sys.argv[1]), TokenUsage.model_validate_json(sys.argv[2])
print("ready", flush=True)
sys.stdin.readline()
for _ in range(int(sys.argv[3])):
    ledger.add(one)
"""


def test_two_processes_adding_at_once_lose_no_tokens(tmp_path: Path) -> None:
    n = 150
    procs = [
        subprocess.Popen([sys.executable, "-c", ADDER, str(tmp_path), ONE.model_dump_json(), str(n)],
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        for _ in range(2)
    ]
    for proc in procs:
        assert proc.stdout is not None and proc.stdout.readline() == "ready\n"
    for proc in procs:  # both start together
        assert proc.stdin is not None
        proc.stdin.write("go\n")
        proc.stdin.flush()
    assert [proc.wait(60) for proc in procs] == [0, 0]
    total = UsageLedger(tmp_path).day()
    assert total.total_tokens == 2 * n * 5 and total.cached_input_tokens == 2 * n
    assert (tmp_path / f"{utc_day()}.json").stat().st_mode & 0o777 == 0o600


def test_a_day_with_nothing_used_is_zero_and_the_folder_is_made_private(tmp_path: Path) -> None:
    ledger = UsageLedger(tmp_path / "usage")
    assert ledger.day() == TokenUsage()
    assert ledger.add(ONE) == ONE
    assert (tmp_path / "usage").stat().st_mode & 0o777 == 0o700


@pytest.mark.parametrize("content", [b"{not json", b'{"input_tokens": "many"}', b"[]", b" " * 10_000])
def test_a_file_that_is_not_a_days_counts_is_an_error_naming_it(tmp_path: Path, content: bytes) -> None:
    ledger = UsageLedger(tmp_path)
    path = tmp_path / f"{utc_day()}.json"
    path.write_bytes(content)
    for attempt in (ledger.day, lambda: ledger.add(ONE)):
        with pytest.raises(LedgerError) as raised:
            attempt()
        assert str(path) in str(raised.value) and "remove it" in str(raised.value)
    assert path.read_bytes() == content  # nothing lost or overwritten


def test_a_link_in_place_of_the_days_file_is_refused(tmp_path: Path) -> None:
    target = tmp_path / "elsewhere.json"
    target.write_text("{}")
    os.symlink(target, tmp_path / f"{utc_day()}.json")
    with pytest.raises(LedgerError, match="symbolic link"):
        UsageLedger(tmp_path).add(ONE)
    assert target.read_text() == "{}"
