"""A person's first commands on a fresh clone: the README's shell lines run in order, a resumed
thread keeps the model, provider and policy it ran with, and a run that cannot start says why on
stderr and leaves no thread behind."""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path

import pytest

from tests.cli.proc import ROOT, events_of, nbagent, one_line_error
from tests.fakes.openai_server import FakeOpenAIServer

HELLO = "replay:tests/fixtures/replay_hello.json"
HEADER = re.compile(r"^\[model: .* \| policy: .* \| thread: thread_\w+\]$")


def rollouts(home: Path) -> list[Path]:
    return sorted(home.rglob("*.jsonl")) if home.exists() else []


def first_line(home: Path, thread: str) -> dict:
    return json.loads((home / "threads" / f"{thread}.jsonl").read_text().splitlines()[0])


def readme_shell_lines() -> list[list[str]]:
    """The README's "From a shell" block: its first three commands (run, threads, resume)."""
    text = (ROOT / "README.md").read_text()
    block = text.split("From a shell:", 1)[1].split("```bash", 1)[1].split("```", 1)[0]
    lines = [shlex.split(line, comments=True) for line in block.strip().splitlines()[:3]]
    assert [line[:2] for line in lines] == [["nbagent", "run"], ["nbagent", "threads"], ["nbagent", "resume"]]
    return lines


def test_the_readme_shell_commands_run_in_sequence(tmp_path: Path) -> None:
    home = tmp_path / "home"
    run, threads, resume = readme_shell_lines()
    first = nbagent(*run[1:], home=home)
    assert first.returncode == 0 and first.stderr == "", first.stderr
    thread = events_of(first.stdout)[0]["thread_id"]
    listed = nbagent(*threads[1:], home=home)
    assert listed.returncode == 0 and thread in listed.stdout
    again = nbagent(*[thread if word == "THREAD_ID" else word for word in resume[1:]], home=home)
    assert again.returncode == 0 and again.stderr == "", (again.stdout, again.stderr)
    header, *said = again.stdout.splitlines()
    assert header == f"[model: scripted replay: replay_hello.json | policy: on-request | thread: {thread}]"
    assert said[0].startswith("Hello! I am a scripted replay model")


def test_resume_uses_the_model_provider_and_policy_the_thread_ran_with(openai_server: FakeOpenAIServer, tmp_path: Path) -> None:
    """The provider's table is the user's; the project folder picks it. Resumed from another
    folder, the thread still talks to that server with that model, under its policy."""
    home, work, elsewhere = tmp_path / "home", tmp_path / "work", tmp_path / "elsewhere"
    for folder in (home, work, elsewhere):
        folder.mkdir()
    provider = (f'[model_providers.local]\nbase_url = "{openai_server.base_url}"\nwire_api = "chat"\n'
                'env_key = "LOCAL_KEY"\nrequest_max_retries = 0\n')
    (home / "config.toml").write_text(provider)
    (work / "nbagent.toml").write_text('model = "fake-model"\nmodel_provider = "local"\napproval_policy = "never"\n')
    key = {"LOCAL_KEY": "sk-local-secret-0123456789"}
    openai_server.script([{"text": "first answer"}, {"text": "second answer"}])
    first = nbagent("run", "first", home=home, cwd=work, env=key)
    assert first.returncode == 0, (first.stdout, first.stderr)
    thread = first.stdout.splitlines()[0].rsplit(" ", 1)[1].rstrip("]")
    meta = first_line(home, thread)
    assert (meta["model"], meta["model_provider"], meta["base_url"], meta["approval_policy"]) == (
        "fake-model", "local", openai_server.base_url, "never")
    assert key["LOCAL_KEY"] not in (home / "threads" / f"{thread}.jsonl").read_text()

    again = nbagent("resume", thread, "second", home=home, cwd=elsewhere, env=key)
    assert again.returncode == 0, (again.stdout, again.stderr)
    assert again.stdout.splitlines()[0] == (
        f"[model: fake-model (Chat Completions at {openai_server.base_url}) | policy: never | thread: {thread}]")
    assert "second answer" in again.stdout
    assert [r["model"] for r in openai_server.requests] == ["fake-model", "fake-model"]
    assert openai_server.headers[-1]["authorization"] == f"Bearer {key['LOCAL_KEY']}"

    told = nbagent("resume", thread, "-m", HELLO, "--policy", "full-auto", "third", home=home, env=key)
    assert told.returncode == 0, told.stderr
    assert told.stdout.splitlines()[0] == f"[model: scripted replay: replay_hello.json | policy: full-auto | thread: {thread}]"
    assert len(openai_server.requests) == 2

    (home / "config.toml").write_text("")  # the provider's table is gone: say so, send nothing anywhere
    gone = nbagent("resume", thread, "fourth", home=home, cwd=elsewhere, env={**key, "OPENAI_API_KEY": "sk-openai-0123456789"})
    error = one_line_error(gone)
    assert "'local'" in error and openai_server.base_url in error and "-m" in error
    assert gone.stdout == "" and len(openai_server.requests) == 2


def test_a_remembered_replay_script_with_no_response_left_says_so(tmp_path: Path) -> None:
    home, script = tmp_path / "home", tmp_path / "script.json"
    script.write_text(json.dumps({"responses": [{"text": "only once"}]}))
    first = nbagent("run", "-m", f"replay:{script.name}", "--json", "go", home=home, cwd=tmp_path)
    thread = events_of(first.stdout)[0]["thread_id"]
    script.write_text(json.dumps({"responses": []}))
    again = nbagent("resume", thread, "and then?", home=home, cwd=tmp_path)
    assert again.returncode == 1
    assert HEADER.match(again.stdout.splitlines()[0]) and "scripted replay: script.json" in again.stdout
    assert again.stderr.splitlines() == [
        f"error: replay script {script} has no response left: it had 0 responses and all were used. "
        'Add more to its "responses" list.'
    ]


NOT_STARTED = {
    "no model": ([], "no model configured"),
    "no API key": (["-m", "gpt-5.1"], "needs an API key"),
    "no replay file": (["-m", "replay:nowhere.json"], "nowhere.json does not exist"),
}


@pytest.mark.parametrize("json_flag", [[], ["--json"]], ids=["text", "json"])
@pytest.mark.parametrize("case", NOT_STARTED, ids=list(NOT_STARTED))
def test_a_run_that_cannot_start_says_why_on_stderr_and_leaves_no_thread(tmp_path: Path, case: str, json_flag: list[str]) -> None:
    home = tmp_path / "home"
    flags, why = NOT_STARTED[case]
    proc = nbagent("run", *flags, *json_flag, "hello", home=home, cwd=tmp_path)
    assert proc.stdout == "" and why in one_line_error(proc)
    assert one_line_error(proc).startswith("nbagent run: ")
    assert json.loads(nbagent("threads", "--json", home=home).stdout) == [] and rollouts(home) == []
    assert not list((home / "threads").iterdir())


@pytest.mark.parametrize("case", ["no API key", "no replay file"])
def test_a_resume_that_cannot_start_says_why_on_stderr_and_adds_nothing(tmp_path: Path, case: str) -> None:
    home = tmp_path / "home"
    thread = events_of(nbagent("run", "-m", HELLO, "--json", "hello", home=home).stdout)[0]["thread_id"]
    before = (home / "threads" / f"{thread}.jsonl").read_text()
    flags, why = NOT_STARTED[case]
    proc = nbagent("resume", thread, *flags, "again", home=home, cwd=tmp_path)
    assert proc.stdout == "" and why in one_line_error(proc)
    assert one_line_error(proc).startswith("nbagent resume: ")
    assert (home / "threads" / f"{thread}.jsonl").read_text() == before


def test_a_turn_that_fails_prints_the_header_then_its_error_once_on_stderr(tmp_path: Path) -> None:
    script = tmp_path / "empty.json"
    script.write_text('{"responses": []}')
    proc = nbagent("run", "-m", f"replay:{script}", "say", home=tmp_path / "home")
    assert proc.returncode == 1
    assert HEADER.match(proc.stdout.splitlines()[0]) and "error" not in proc.stdout
    [error] = proc.stderr.splitlines()
    assert error.startswith("error: replay script") and "empty.json" in error


def test_export_counts_its_responses_in_words_that_fit(tmp_path: Path) -> None:
    home = tmp_path / "home"
    thread = events_of(nbagent("run", "-m", HELLO, "--json", "hello", home=home).stdout)[0]["thread_id"]
    done = nbagent("export", "replay", thread, "-o", str(tmp_path / "s.json"), home=home)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == f"wrote {tmp_path / 's.json'}: 1 response from thread {thread}"


def _option_help(text: str, option: str) -> str:
    """The help of ``option`` in an argparse ``--help``: its line and the lines continuing it."""
    lines = text.splitlines()
    at = next(n for n, line in enumerate(lines) if line.strip().startswith(option + " "))
    words = lines[at].split()
    for line in lines[at + 1:]:
        if not line.startswith(" " * 8):
            break
        words += line.split()
    return " ".join(words)


@pytest.mark.parametrize("argv", [
    [], ["run"], ["resume"], ["compact"], ["export"], ["resources"], ["prompts"], ["mcp", "list"], ["inspect", "tools"],
], ids=lambda argv: " ".join(argv) or "nbagent")
def test_dash_c_reads_the_same_in_every_help(tmp_path: Path, argv: list[str]) -> None:
    shown = nbagent(*argv, "--help", home=tmp_path)
    assert shown.returncode == 0, shown.stderr
    assert _option_help(shown.stdout, "-C") == "-C DIR work in DIR (config, relative paths)"


def test_resume_and_demo_help_say_what_they_take(tmp_path: Path) -> None:
    resume = nbagent("resume", "--help", home=tmp_path).stdout
    positional = resume.split("positional arguments:", 1)[1].split("options:", 1)[0]
    assert re.search(r"^\s+thread\s+\S", positional, re.MULTILINE) and re.search(r"^\s+goal\s+\S", positional, re.MULTILINE)
    demo = nbagent("demo", "--help", home=tmp_path).stdout
    description = demo.split("\n\n")[1]
    assert "quickstart" in description and not description.startswith("options:")


def test_demo_refuses_a_work_folder_it_did_not_make_and_keeps_it(tmp_path: Path) -> None:
    mine = tmp_path / "quickstart-work" / "mine.txt"
    mine.parent.mkdir()
    mine.write_text("keep me")
    proc = nbagent("demo", "--output", str(tmp_path), home=tmp_path / "home", timeout=180)
    error = one_line_error(proc)
    assert error.startswith("nbagent demo: ") and str(mine.parent) in error and "--output" in error
    assert mine.read_text() == "keep me" and not (tmp_path / "00-quickstart.executed.ipynb").exists()
