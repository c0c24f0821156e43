"""The ``nbagent`` command as a person uses it: what it prints, what it leaves behind."""

from __future__ import annotations

import json
import re
from datetime import datetime
from pathlib import Path

import pytest

from tests.cli.proc import demo_server, events_of, failing_server, nbagent, one_line_error

HELLO = "replay:tests/fixtures/replay_hello.json"
LONG = "notes_kept_by_a_server_with_a_long_name"


def work_dir(tmp_path: Path, tables: str) -> Path:
    work = tmp_path / "work"
    work.mkdir(exist_ok=True)
    (work / "nbagent.toml").write_text(tables)
    return work


def rollouts(home: Path) -> list[Path]:
    return sorted(home.rglob("*.jsonl")) if home.exists() else []


def test_commands_that_run_no_turn_create_no_thread(tmp_path: Path) -> None:
    home = tmp_path / "home"
    work = work_dir(tmp_path, demo_server("demo", tmp_path / "notes"))
    for argv in (["tools"], ["tools", "--json"], ["threads"], ["threads", "--json"], ["index", "rebuild"]):
        proc = nbagent(*argv, home=home, cwd=work)
        assert proc.returncode == 0, (argv, proc.stderr)
    assert json.loads(nbagent("threads", "--json", home=home, cwd=work).stdout) == []
    assert rollouts(home) == []


def test_threads_show_the_date_the_first_prompt_and_a_plural_that_fits(tmp_path: Path) -> None:
    home = tmp_path / "home"
    one = events_of(nbagent("run", "-m", HELLO, "--json", "plan the week", home=home).stdout)[0]["thread_id"]
    nbagent("resume", one, "-m", HELLO, "--json", "and the weekend", home=home)
    two = events_of(nbagent("run", "-m", HELLO, "--json", "just once", home=home).stdout)[0]["thread_id"]
    proc = nbagent("threads", home=home)
    assert proc.returncode == 0, proc.stderr
    lines = {line.split()[0]: line for line in proc.stdout.splitlines() if line.startswith("thread")}
    today = datetime.now().strftime("%Y-%m-%d")
    assert re.search(rf"\b{today} \d\d:\d\d\b", lines[one]) and re.search(rf"\b{today} \d\d:\d\d\b", lines[two])
    assert "2 turns" in lines[one] and "plan the week" in lines[one] and "and the weekend" not in lines[one]
    assert re.search(r"\b1 turn\b", lines[two]) and "1 turns" not in lines[two] and "just once" in lines[two]
    listed = {t["id"]: t for t in json.loads(nbagent("threads", "--json", home=home).stdout)}
    assert listed[one]["first_prompt"] == "plan the week" and listed[one]["last_prompt"] == "and the weekend"


def test_threads_says_on_stderr_when_more_are_saved_than_the_limit(tmp_path: Path) -> None:
    home = tmp_path / "home"
    made = [events_of(nbagent("run", "-m", HELLO, "--json", f"goal {n}", home=home).stdout)[0]["thread_id"] for n in range(3)]
    proc = nbagent("threads", "--limit", "2", home=home)
    assert [line.split()[0] for line in proc.stdout.splitlines()] == made[:0:-1]  # the two newest
    assert proc.stderr.strip() == "(the 2 most recently updated; more are saved: --limit N)"
    listed = nbagent("threads", "--json", "--limit", "2", home=home)
    assert len(json.loads(listed.stdout)) == 2 and "more are saved" in listed.stderr
    everything = nbagent("threads", "--limit", "3", home=home)
    assert len(everything.stdout.splitlines()) == 3 and everything.stderr == ""
    refused = nbagent("threads", "--limit", "0", home=home)
    assert refused.returncode == 2 and "expected a positive int, got '0'" in refused.stderr
    huge = nbagent("threads", "--limit", str(2**63 - 1), home=home)  # past SQLite's LIMIT once 1 is added
    assert huge.returncode == 0 and len(huge.stdout.splitlines()) == 3 and huge.stderr == "", huge.stderr


def _write_script(tmp_path: Path) -> Path:
    script = tmp_path / "write.json"
    call = {"name": "mcp__demo__write_note", "arguments": {"name": "todo", "text": "buy milk"}}
    script.write_text(json.dumps({"responses": [{"tool_calls": [call]}, {"text": "done"}]}))
    return script


def test_policy_help_says_what_a_headless_run_does(tmp_path: Path) -> None:
    """The help names the default and says that what would ask is declined; runs agree."""
    help_text = " ".join(nbagent("run", "--help", home=tmp_path).stdout.split())
    default = re.search(r"--policy .*?default: ([a-z-]+)", help_text)
    assert default and "declined" in help_text and "full-auto runs every call" in help_text
    notes = tmp_path / "notes"
    work = work_dir(tmp_path, demo_server("demo", notes))
    script = _write_script(tmp_path)

    quiet = events_of(nbagent("run", "-m", f"replay:{script}", "--json", "save it", home=tmp_path / "h", cwd=work).stdout)
    assert quiet[0]["policy"] == default.group(1)
    assert [(e["decision"], e["by"]) for e in quiet if e["type"] == "approval_resolved"] == [("deny", "policy")]
    assert not (notes / "record.jsonl").exists()

    loud = nbagent("run", "-m", f"replay:{script}", "--policy", "full-auto", "save it", home=tmp_path / "h", cwd=work)
    assert loud.returncode == 0, loud.stderr
    assert [json.loads(line)["tool"] for line in (notes / "record.jsonl").read_text().splitlines()] == ["write_note"]


@pytest.mark.parametrize(("argv", "problem"), [(["-m", "gpt-5.1"], "needs an API key"), ([], "no model configured.")])
def test_an_error_is_printed_once(tmp_path: Path, argv: list[str], problem: str) -> None:
    proc = nbagent("run", *argv, "hello", home=tmp_path, cwd=tmp_path)
    assert proc.returncode == 2  # nothing started: a config problem, like bad input
    assert (proc.stdout + proc.stderr).count(problem) == 1


def test_tools_prints_a_table_with_states_errors_and_cut_names(tmp_path: Path) -> None:
    work = work_dir(tmp_path, demo_server(LONG, tmp_path / "notes") + failing_server("broken", "cannot open notes.db"))
    proc = nbagent("tools", home=tmp_path / "home", cwd=work)
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert "ServerStatus" not in out and "state=" not in out
    lines = out.splitlines()
    broken = next(line for line in lines if line.startswith("broken"))
    assert "failed" in broken and "cannot open notes.db" in broken
    ready = next(line for line in lines if line.startswith(LONG[:20]))
    assert "ready" in ready and re.search(r"\b4 tools\b", ready)
    tool_lines = [line for line in lines if "write_note" in line]
    assert len(tool_lines) == 1 and "…" in tool_lines[0] and "destructive" in tool_lines[0]
    assert max(len(line) for line in lines[lines.index(next(x for x in lines if x.startswith("TOOL"))):]) <= 100


def test_tools_prints_the_server_state_not_its_repr(tmp_path: Path) -> None:
    work = work_dir(tmp_path, demo_server("demo", tmp_path / "notes"))
    proc = nbagent("tools", home=tmp_path / "home", cwd=work)
    assert proc.returncode == 0, proc.stderr
    assert "ServerStatus" not in proc.stdout and "name=" not in proc.stdout
    assert re.search(r"^demo\s+ready\s", proc.stdout, re.MULTILINE)


@pytest.mark.parametrize("required", [False, True])
def test_tools_json_lists_failed_servers_and_fails_when_one_is_required(tmp_path: Path, required: bool) -> None:
    work = work_dir(tmp_path, demo_server("demo", tmp_path / "notes")
                    + failing_server("broken", "cannot open notes.db", required=required))
    proc = nbagent("tools", "--json", home=tmp_path / "home", cwd=work)
    listed = json.loads(proc.stdout)
    servers = {s["name"]: s for s in listed["servers"]}
    assert servers["demo"]["state"] == "ready" and servers["demo"]["error"] is None
    assert servers["broken"]["state"] == "failed" and "startup" in servers["broken"]["error"]
    assert "cannot open notes.db" in servers["broken"]["stderr_tail"]
    assert servers["broken"]["required"] is required
    assert {t["server"] for t in listed["tools"]} == {"demo"}
    if required:
        assert "broken" in one_line_error(proc)
    else:
        assert proc.returncode == 0 and proc.stderr == ""


def test_tools_text_fails_when_a_required_server_fails(tmp_path: Path) -> None:
    work = work_dir(tmp_path, failing_server("broken", "cannot open notes.db", required=True))
    proc = nbagent("tools", home=tmp_path / "home", cwd=work)
    assert "broken" in one_line_error(proc) and "required" in proc.stderr
    assert "cannot open notes.db" in proc.stdout
