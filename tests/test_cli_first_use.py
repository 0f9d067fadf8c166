"""What a new user meets first on the command line: `scorespec doctor` from a fresh process and with
the model from the environment, the advice a refused key or mode gives (the run's own model and
base URL, each error said once), a closed stdout pipe, and what `--quiet` leaves printed."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from typer.testing import CliRunner

import engine.cli.doctor  # noqa: F401  (registers doctor)
import engine.cli.eval  # noqa: F401  (registers eval)
from engine.cli.main import app
from engine.judge.model import doctor_command
from engine.testing import FakeOpenAIServer, Fault
from engine.testing.server_rules import NoToolsRules

ROOT = Path(__file__).resolve().parents[1]
ENV = {"COLUMNS": "250", "SCORESPEC_MODEL": None, "SCORESPEC_MODE": None, "OPENAI_API_KEY": "k",
       "OPENAI_BASE_URL": None}
REFUSED_KEY = {"error": {"message": "Incorrect API key provided.", "type": "invalid_request_error",
                         "code": "invalid_api_key"}}


def invoke(*args: str, **env):
    return CliRunner().invoke(app, list(args), env={**ENV, **env})


def test_doctor_reports_the_embedded_judge_in_a_process_that_loaded_nothing_else():
    env = {k: v for k, v in os.environ.items() if k != "SCORESPEC_MODEL"}
    done = subprocess.run([sys.executable, "-m", "engine", "doctor", "--model", "local-tiny", "--json"], cwd=ROOT,
                          capture_output=True, text=True, env=env, timeout=300)
    assert "not loaded" not in done.stderr
    found = json.loads(done.stdout)
    assert found["embedded"] is True and found["file"].endswith(".gguf")
    assert found["context_window"] > 0
    assert done.returncode == (0 if found["ok"] else 1)


def test_doctor_takes_the_model_from_scorespec_model():
    with FakeOpenAIServer({"ok": True}) as server:
        result = invoke("doctor", "--base-url", server.base_url, "--json", SCORESPEC_MODEL="openai/house-model")
    assert result.exit_code == 0, result.output
    assert json.loads(result.output)["model"] == "openai/house-model"


def test_doctor_without_a_model_says_both_ways_to_give_one():
    result = invoke("doctor")
    assert result.exit_code == 2
    assert "--model" in result.output and "$SCORESPEC_MODEL" in result.output


def test_doctor_advice_for_a_failing_default_mode_names_only_settings_that_exist():
    with FakeOpenAIServer({"ok": True}, rules=NoToolsRules()) as server:
        result = invoke("doctor", "--model", "openai/house-model", "--base-url", server.base_url, "--json")
    found = json.loads(result.output)
    assert result.exit_code == 1
    assert found["problem"] == ("the default mode, tools, does not work here; json_schema does: "
                                "set SCORESPEC_MODE=json_schema for the run (or mode= in Python)")


def test_doctor_says_a_refused_key_once():
    with FakeOpenAIServer(Fault.status(401, body=REFUSED_KEY)) as server:
        result = invoke("doctor", "--model", "openai/gpt-4o-mini", "--base-url", server.base_url)
    assert result.exit_code == 1
    assert result.output.count("Incorrect API key provided.") == 1
    assert "cannot run: the server refused the API key (HTTP 401: Incorrect API key provided.)" in result.output


def test_a_refused_key_stops_the_run_with_one_message_naming_the_runs_doctor_command(tmp_path):
    data = tmp_path / "items.jsonl"
    data.write_text(json.dumps({"output": "Paris is in France.", "context": ["Paris is in France."]}) + "\n",
                    encoding="utf-8")
    with FakeOpenAIServer(Fault.status(401, body=REFUSED_KEY)) as server:
        result = invoke("eval", "faithfulness_quick", "--data", str(data), "--model", "openai/gpt-4o-mini",
                        "--base-url", server.base_url, "--no-cache", "--quiet", "--json",
                        "--store", str(tmp_path / "store.sqlite"))
        doctor, base_url = doctor_command("openai/gpt-4o-mini", server.base_url), server.base_url
    stopped = json.loads(result.stdout)["stopped"]
    assert result.exit_code == 2
    assert stopped.startswith("the provider refused the request's credentials (HTTP 401: Incorrect API key "
                              "provided.): check the API key")
    assert stopped.count("refused") == 1 and stopped.count("HTTP 401") == 1
    assert f"{doctor} checks it" in stopped
    assert doctor == f"`scorespec doctor --model openai/gpt-4o-mini --base-url {base_url}`"


def test_a_closed_stdout_pipe_ends_the_command_quietly():
    env = {k: v for k, v in os.environ.items() if k != "SCORESPEC_MODEL"}
    process = subprocess.Popen([sys.executable, "-m", "engine", "list", "--functions"], cwd=ROOT, env=env,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    process.stdout.close()  # the reader is gone before the first line is written, as `| head -0`
    stderr = process.stderr.read().decode()
    assert process.wait(timeout=120) == 141
    assert stderr == ""


def test_quiet_says_what_it_leaves_printed():
    result = invoke("eval", "--help")
    assert "the run's header, its note: lines and the summary still print" in " ".join(result.output.split())
