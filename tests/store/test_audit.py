"""The audit log's file: whole lines from writers in several processes, private modes, and no
link followed at its name."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

from nbagent.store.audit import AuditLog

WRITER = """
import sys
from pathlib import Path
from nbagent.store.audit import AuditLog
log = AuditLog(Path(sys.argv[1]))
for i in range(int(sys.argv[3])):
    log.write({"event": "codex.tool_result", "writer": sys.argv[2], "i": i, "pad": "x" * 3000})
"""


def test_lines_of_processes_writing_at_once_stay_whole(tmp_path: Path) -> None:
    folder = tmp_path / "audit"
    writers = [subprocess.Popen([sys.executable, "-c", WRITER, str(folder), str(n), "300"]) for n in range(3)]
    assert [w.wait(60) for w in writers] == [0, 0, 0]
    path = AuditLog(folder).path_for(time.time())
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    assert sorted((line["writer"], line["i"]) for line in lines) == sorted((str(n), i) for n in range(3) for i in range(300))
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700 and stat.S_IMODE(path.stat().st_mode) == 0o600


def test_a_link_at_the_days_file_is_refused(tmp_path: Path) -> None:
    log = AuditLog(tmp_path / "audit")
    elsewhere = tmp_path / "elsewhere.txt"
    elsewhere.write_text("")
    (tmp_path / "audit").mkdir()
    os.symlink(elsewhere, log.path_for(time.time()))
    with pytest.raises(OSError, match="an audit log is a regular file, not a symbolic link"):
        log.write({"event": "x"})
    assert elsewhere.read_text() == ""


def test_a_days_file_removed_while_written_is_made_again_and_the_next_day_has_its_own(tmp_path: Path) -> None:
    log = AuditLog(tmp_path / "audit")
    clock = [100.0]
    log._clock = lambda: clock[0]
    day = 1_764_892_800.0  # a UTC midnight
    log.write({"event": "first"}, day)
    log.path_for(day).unlink()  # a collector took the file while the session runs
    clock[0] += 2.0
    log.write({"event": "second"}, day + 60)
    log.write({"event": "next day"}, day + 86_400)
    assert [json.loads(line)["event"] for line in log.path_for(day).read_text().splitlines()] == ["second"]
    assert [json.loads(line)["event"] for line in log.path_for(day + 86_400).read_text().splitlines()] == ["next day"]
    assert log.path_for(day + 86_400).name == "2025-12-06.jsonl"


def test_a_line_is_the_compact_json_an_administrators_tools_read(tmp_path: Path) -> None:
    """Each line is what ``json.dumps`` writes compactly: text other than ASCII as it is, control
    characters escaped, times and durations as Python spells them, one record a line."""
    log = AuditLog(tmp_path / "audit")
    at = 1_764_892_800.123456
    records = [
        {"event": "codex.tool_result", "at": at, "user": "ünï", "uid": 0, "reason": 'a "quote"\n\t\x01\u2028 😀',
         "definition_hash": None, "success": True, "duration_ms": round(12.34567, 3), "fields": ["b", "a"]},
        {"event": "codex.tool_decision", "at": at, "duration_ms": 0.0, "big": 1e16, "n": 2**70},
    ]
    log.write_many(records, at)
    expected = "".join(json.dumps(r, separators=(",", ":"), ensure_ascii=False) + "\n" for r in records)
    assert log.path_for(at).read_bytes() == expected.encode()
