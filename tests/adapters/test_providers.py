"""The provider adapters against a stub server on the loopback address (R-STEP-8).

Real drivers (``lernie prompt``/``advance`` processes) talk to the stub through
the official SDKs; nothing reaches the network. Each test is run for both
``anthropic`` and ``openai``.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from lernie_ref.inbox import RecordingLauncher, cli_prompt
from lernie_ref.substrate.preflight import write_record
from lernie_ref.substrate.workspace import Workspace
from tests.support.dialects import DIALECTS, KEY, Dialect, transcript_files
from tests.support.provider_stub import Answer, serving
from tests.support.readers import lock_is_free, names
from tests.support.runners import run_cli
from tests.support.waits import wait_quiescent

ids = [d.name for d in DIALECTS]


def _script(dialect: Dialect) -> object:
    """The operator's agent dispatches a child, messages it, answers; the child answers."""

    def respond(body: dict[str, object], n: int) -> Answer:
        is_root = "from: user" in dialect.first_user_text(body)
        results = dialect.results(body)
        if not is_root:
            return dialect.text("kid heard: " + dialect.last_user_text(body).splitlines()[-1], n)
        if not results:
            arguments: dict[str, object] = {"goal": "count to three", "name": "kid"}
            return dialect.tool(f"call_d{n}", "dispatch", arguments, n)
        if len(results) == 1:
            child = json.loads(results[0])["agent"]
            arguments = {"agent": child, "content": "hello kid"}
            return dialect.tool(f"call_m{n}", "message", arguments, n)
        # after the message, and after each reply of the kid: --wait may see either answer
        return dialect.text("root done", n)

    return respond


def _everything_written(ws: Workspace) -> str:
    """Every log, inbox and worktree file, and every commit with its diff, as text."""
    parts: list[str] = []
    for path in ws.root.rglob("*"):
        if path.is_file() and "repo.git" not in path.parts:
            parts.append(path.read_bytes().decode("utf-8", "replace"))
    log = subprocess.run(
        ["git", "--git-dir", str(ws.root / "repo.git"), "log", "--all", "-p"],
        capture_output=True,
        text=True,
        check=True,
    )
    parts.append(log.stdout)
    return "\n".join(parts)


@pytest.mark.parametrize("dialect", DIALECTS, ids=ids)
def test_r_step_8_dispatch_message_answer_end_to_end(ws: Workspace, dialect: Dialect) -> None:
    with serving(_script(dialect)) as stub:  # type: ignore[arg-type]
        proc = run_cli(["prompt", str(ws.root), "plan the count", "--wait"], dialect.env(stub.url))
        assert proc.returncode == 0, proc.stderr
        root, response = proc.stdout.split("\n", 1)
        assert response == "root done\n"
        wait_quiescent(ws)
        seen = list(stub.seen)
    (kid,) = [a for a in ws.agent_ids() if a != root]
    assert ws.agent_name(kid) == "kid"
    kid_texts = [
        f[1].decode() for f in transcript_files(ws.worktree(kid)) if f[0].endswith(".json")
    ]
    # the goal and the message may arrive in one drain or two; the last answer heard both
    assert kid_texts and "kid heard: hello kid" in kid_texts[-1]
    mail = [f[1].decode() for f in transcript_files(ws.worktree(kid)) if f[0].endswith(".md")]
    assert [m.rsplit("\n", 1)[-1] for m in mail] == ["count to three", "hello kid"]
    # Every request: the right endpoint, the key, the tools, and a history equal to the
    # transcript up to the model entry its answer became.
    transcripts = {a: transcript_files(ws.worktree(a)) for a in (root, kid)}
    matched: set[tuple[str, int]] = set()
    for request in seen:
        assert request.path == dialect.path
        assert dialect.key_header(request.headers) == KEY
        tools = request.body["tools"]
        assert isinstance(tools, list)
        declared = [
            t["name"] if dialect.name == "anthropic" else t["function"]["name"] for t in tools
        ]
        # R-TOOL-1: the default tools (every contained tool, no shell)
        assert declared == ["message", "dispatch", "read_file", "cd", "apply_patch"]
        messages = dialect.conversation(request.body)
        hits = [
            (agent, k)
            for agent, files in transcripts.items()
            for k in range(1, len(files))
            if dialect.expected_messages(files[:k]) == messages
            and not files[k][0].endswith((".md", "-tool.json"))
        ]
        assert len(hits) == 1, (messages, hits)
        agent, k = hits[0]
        matched.add(hits[0])
        answer = request.answer.body
        entry = json.loads(transcripts[agent][k][1])
        if dialect.name == "anthropic":
            assert entry["content"] == answer["content"]
            assert entry["usage"] == answer["usage"]
            roles = [m["role"] for m in messages]
            assert roles == ["user", "assistant"] * (len(roles) // 2) + ["user"] * (len(roles) % 2)
            assert [b["type"] for b in messages[-1]["content"]][:1] in (["text"], ["tool_result"])
        else:
            usage = answer["usage"]
            assert entry["usage"] == {
                "input_tokens": usage["prompt_tokens"],
                "output_tokens": usage["completion_tokens"],
            }
            assert request.body["messages"][0]["role"] == "system"
    # every model entry came from exactly one request
    model_entries = {
        (agent, k)
        for agent, files in transcripts.items()
        for k, (name, _) in enumerate(files)
        if name.endswith(f"-{dialect.name}.json")
    }
    assert matched == model_entries
    # every tool_use in the transcript has its result (paired in the requests above)
    assert KEY not in _everything_written(ws)
    status = json.loads(run_cli(["status", str(ws.root), "--json"]).stdout)
    assert status["tokens"]["total"] == sum((100 + n) + (10 + n) for n in range(len(seen)))


@pytest.mark.parametrize(
    ("dialect", "status"),
    [(DIALECTS[0], 429), (DIALECTS[0], 529), (DIALECTS[1], 429), (DIALECTS[1], 503)],
    ids=["anthropic-429", "anthropic-529", "openai-429", "openai-503"],
)
def test_r_step_8_retry_after_an_overload_then_success(
    ws: Workspace, dialect: Dialect, status: int
) -> None:
    def respond(body: dict[str, object], n: int) -> Answer:
        if n == 0:
            return dialect.error(status, "rate_limit_error", f"slow down {KEY}", "req_busy")
        return dialect.text("made it", n)

    (ws.root / "lernie.toml").write_text(f"[{dialect.name}]\nretry_backoff = 0.01\n")
    with serving(respond) as stub:
        proc = run_cli(["prompt", str(ws.root), "hello", "--wait"], dialect.env(stub.url))
        assert proc.returncode == 0, proc.stderr
        root, response = proc.stdout.split("\n", 1)
        assert response == "made it\n"
        wait_quiescent(ws)
        assert len(stub.seen) == 2
    log = ws.driver_log(root).read_text()
    (line,) = log.splitlines()
    assert line.startswith(f"lernie: {dialect.name} ")
    assert f"(HTTP {status}" in line and "request id req_busy" in line
    assert "retry 1/5 in" in line
    assert KEY not in log and "slow down [key]" in line
    assert names(ws, root) == ["001-user.md", f"002-{dialect.name}.json"]


@pytest.mark.parametrize("dialect", DIALECTS, ids=ids)
def test_r_step_8_retries_end_at_the_budget_with_one_line(ws: Workspace, dialect: Dialect) -> None:
    def respond(body: dict[str, object], n: int) -> Answer:
        return dialect.error(500, "api_error", "boom", f"req_{n}")

    (ws.root / "lernie.toml").write_text(
        f"[{dialect.name}]\nretry_backoff = 0.01\nmax_retries = 2\n"
    )
    with serving(respond) as stub:
        root = run_cli(["prompt", str(ws.root), "hello"], dialect.env(stub.url)).stdout.strip()
        wait_quiescent(ws)
        assert len(stub.seen) == 3
    lines = ws.driver_log(root).read_text().splitlines()
    assert len(lines) == 3
    assert "retry 1/2" in lines[0] and "retry 2/2" in lines[1]
    assert lines[2].startswith(f"lernie advance: {dialect.name} InternalServerError (HTTP 500")
    assert lines[2].endswith("request id req_2): boom (gave up after 2 retries)")
    assert names(ws, root) == ["001-user.md"] and lock_is_free(ws, root)


@pytest.mark.parametrize("dialect", DIALECTS, ids=ids)
def test_r_step_8_a_400_fails_the_hop_cleanly(ws: Workspace, dialect: Dialect) -> None:
    def respond(body: dict[str, object], n: int) -> Answer:
        if n == 0:
            return dialect.error(400, "invalid_request_error", "messages: bad", "req_bad")
        return dialect.text("fine now", n)

    with serving(respond) as stub:
        env = dialect.env(stub.url)
        root = run_cli(["prompt", str(ws.root), "hello"], env).stdout.strip()
        wait_quiescent(ws)
        assert len(stub.seen) == 1
        assert ws.driver_log(root).read_text() == (
            f"lernie advance: {dialect.name} BadRequestError (HTTP 400 invalid_request_error, "
            "request id req_bad): messages: bad\n"
        )
        assert names(ws, root) == ["001-user.md"] and lock_is_free(ws, root)
        # the next touch tries again and succeeds
        assert run_cli(["advance", str(ws.root), root], env).returncode == 0
        wait_quiescent(ws)
    assert names(ws, root) == ["001-user.md", f"002-{dialect.name}.json"]


@pytest.mark.parametrize("dialect", DIALECTS, ids=ids)
def test_r_step_8_a_stop_during_a_slow_answer_ends_stopped_with_nothing_committed(
    ws: Workspace, dialect: Dialect
) -> None:
    def respond(body: dict[str, object], n: int) -> Answer:
        return Answer(**{**dialect.text("too late", n).__dict__, "delay_s": 600.0})

    with serving(respond) as stub:
        root = run_cli(["prompt", str(ws.root), "think hard"], dialect.env(stub.url)).stdout.strip()
        assert stub.arrived.wait(60)
        assert run_cli(["stop", str(ws.root), root]).returncode == 0
        wait_quiescent(ws)  # the driver leaves without its answer (the stub would wait 600 s)
        status = json.loads(run_cli(["status", str(ws.root), "--json"]).stdout)
    (row,) = status["agents"]
    assert row["last_epitaph"] == "stopped" and row["live"] is False
    assert names(ws, root) == ["001-user.md"]
    assert lock_is_free(ws, root)


@pytest.mark.parametrize("dialect", DIALECTS, ids=ids)
def test_r_step_8_no_key_unknown_setting_missing_extra_fail_before_any_call(
    ws: Workspace, dialect: Dialect, tmp_path: Path
) -> None:
    def respond(body: dict[str, object], n: int) -> Answer:
        return dialect.text("should not be asked", n)

    with serving(respond) as stub:
        env = dialect.env(stub.url)
        # an agent of this model (R-STEP-9) whose first hop is still to be run, by hand
        agent = cli_prompt(ws, "hello", "", RecordingLauncher())
        write_record(str(ws.root), agent, {"model": dialect.name})
        cases = [
            ({**env, dialect.key_var: ""}, "", f"needs an API key: set {dialect.key_var}"),
            (
                env,
                f"[{dialect.name}]\nmodle = 'x'\n",
                f"unknown setting 'modle' in [{dialect.name}]",
            ),
        ]
        hidden = tmp_path / "hidden"
        hidden.mkdir()
        (hidden / f"{dialect.name}.py").write_text("raise ImportError('not installed')\n")
        cases.append(
            (
                {**env, "PYTHONPATH": str(hidden)},
                "",
                f"pip install 'lernie_ref[{dialect.name}]'",
            )
        )
        for case_env, toml, expected in cases:
            (ws.root / "lernie.toml").write_text(toml)
            proc = run_cli(["advance", str(ws.root), agent], case_env)
            assert proc.returncode == 1
            assert proc.stderr.startswith("lernie advance: ") and proc.stderr.count("\n") == 1
            assert expected in proc.stderr
            assert KEY not in proc.stderr
        assert stub.seen == []
