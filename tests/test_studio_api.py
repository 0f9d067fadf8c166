"""`scorespec studio`'s JSON API over real HTTP: uvicorn on 127.0.0.1 (a free port) serving a
folder with a spec of its own, its prompt and a dataset, the judge the fake OpenAI server behind
the judge-call cache. The loop end to end — list, a misspelt key reported at its line, fixed, a
run, a prompt edit and a run that asks again, the comparison, a label — and the refusals (paths
outside the folder, built-in files, a foreign host, a missing token)."""

from __future__ import annotations

import json
import threading
import time

import httpx
import pytest
from starlette.testclient import TestClient
from studio_folder import DATA, ITEMS, PROMPT, SPEC, make_folder, served  # noqa: F401  (fixture)

from engine.studio.server import Studio, make_app
from engine.studio.session import Session
from engine.studio.workspace import Workspace


def api(served, method: str, path: str, **kwargs) -> httpx.Response:
    return httpx.request(method, served.url + path, timeout=30, **kwargs)


def test_the_loop_end_to_end_edit_run_edit_run_compare_label(served):
    specs = api(served, "GET", "/api/specs").json()
    assert {"id": "politeness", "path": SPEC, "origin": "local", "abstract": False,
            "shadowsBuiltin": False} in specs["specs"]
    assert specs["datasets"] == [DATA]
    text = (served.root / SPEC).read_text()
    lines = text.splitlines(keepends=True)
    at = next(i for i, line in enumerate(lines) if line.startswith("description:"))
    misspelt = "".join(lines[:at] + [lines[at].replace("description:", "descripton:")] + lines[at + 1:])

    saved = api(served, "PUT", "/api/files", json={"path": SPEC, "text": misspelt}).json()
    assert (served.root / SPEC).read_text() == misspelt
    (problem,) = saved["problems"]
    assert (problem["file"], problem["line"], problem["col"]) == (SPEC, at + 1, 1)
    assert "descripton" in problem["message"] and "description" in problem["message"]
    assert problem["text"] == f"{SPEC}:{at + 1}:1: {problem['message']}"

    assert api(served, "PUT", "/api/files", json={"path": SPEC, "text": text}).json()["problems"] == []
    first = api(served, "POST", "/api/run", json={"scorer": "politeness", "data": DATA, "limit": 3}).json()
    assert [line["id"] for line in first["results"]] == ["item-1", "item-2", "item-3"]
    assert [line["score"] for line in first["results"]] == [1.0, 1.0, 1.0]
    assert (first["judgeCalls"], first["cachedCalls"], len(served.judge.requests)) == (3, 0, 3)

    prompt = api(served, "GET", "/api/files", params={"path": PROMPT}).json()["text"]
    edited = prompt.replace("Give the verdict first", "Think, then give the verdict first")
    assert api(served, "PUT", "/api/files", json={"path": PROMPT, "text": edited}).json()["problems"] == []
    second = api(served, "POST", "/api/run", json={"scorer": "politeness", "data": DATA, "limit": 3}).json()
    assert (second["judgeCalls"], second["cachedCalls"], len(served.judge.requests)) == (3, 0, 6)
    again = api(served, "POST", "/api/run", json={"scorer": "politeness", "data": DATA, "limit": 3}).json()
    assert (again["judgeCalls"], again["cachedCalls"], len(served.judge.requests)) == (0, 3, 6)

    compared = api(served, "GET", f"/api/runs/{first['runId']}/compare/{second['runId']}").json()
    (paired,) = compared["comparison"]["comparisons"]
    assert paired["paired"]["ties"] == 3
    assert [row["id"] for row in compared["items"]] == ["item-1", "item-2", "item-3"]
    assert [d["file"] for d in compared["diff"]] == ["prompts/politeness/judge.j2"]
    assert "+Think, then give the verdict first" in compared["diff"][0]["diff"]
    runs = api(served, "GET", "/api/runs").json()["runs"]
    assert [r["runId"] for r in runs] == [first["runId"], second["runId"], again["runId"]]

    posted = api(served, "POST", "/api/labels", json={"data": DATA, "id": "item-2", "label": "no", "who": "ana"})
    assert posted.json()["path"] == "items.labels.jsonl"
    (line,) = [json.loads(raw) for raw in (served.root / "items.labels.jsonl").read_text().splitlines()]
    assert (line["id"], line["label"], line["who"]) == ("item-2", "no", "ana") and line["when"].endswith("Z")
    assert api(served, "GET", "/api/labels", params={"data": DATA}).json()["labels"] == {"item-2": "no"}


def test_a_prompt_that_fails_to_compile_is_reported_at_its_own_line(served):
    prompt = (served.root / PROMPT).read_text()
    broken = prompt + "{% if run.output_text %}\nunclosed\n"
    problems = api(served, "PUT", "/api/files", json={"path": PROMPT, "text": broken}).json()["problems"]
    assert problems and {p["file"] for p in problems} == {PROMPT}
    assert problems[0]["line"] > prompt.count("\n")


def test_paths_outside_the_folder_and_built_in_files_are_refused(served):
    for path in ("../outside.yaml", "/etc/passwd", "scorer_specs/../../x.txt"):
        refused = api(served, "PUT", "/api/files", json={"path": path, "text": "x"})
        assert refused.status_code == 403, path
        assert api(served, "GET", "/api/files", params={"path": path}).status_code == 403
    assert not (served.root.parent / "outside.yaml").exists()
    builtin = "builtin:scorer_specs/faithfulness.yaml"
    assert "id: faithfulness" in api(served, "GET", "/api/files", params={"path": builtin}).json()["text"]
    assert api(served, "PUT", "/api/files", json={"path": builtin, "text": "x"}).status_code == 403
    assert api(served, "POST", "/api/labels", json={"data": "../items.jsonl", "id": 1, "label": 1}).status_code == 403


def test_a_label_for_no_item_of_the_data_or_a_blank_label_is_refused(served):
    unknown = api(served, "POST", "/api/labels", json={"data": DATA, "id": "no-such-id", "label": "yes"})
    blank = api(served, "POST", "/api/labels", json={"data": DATA, "id": "item-2", "label": ""})
    assert (unknown.status_code, blank.status_code) == (400, 400)
    assert "no item 'no-such-id'" in unknown.text and "not blank" in blank.text
    assert api(served, "GET", "/api/labels", params={"data": DATA}).json()["labels"] == {}


def test_a_body_that_is_not_json_and_a_request_naming_another_host_are_refused(served):
    form = api(served, "PUT", "/api/files", content=b"path=x&text=y",
               headers={"content-type": "application/x-www-form-urlencoded"})
    assert form.status_code == 400 and "application/json" in form.json()["error"]
    assert api(served, "GET", "/api/specs", headers={"host": "evil.example"}).status_code == 400


def test_bound_elsewhere_every_api_request_needs_the_token(tmp_path):
    root = make_folder(tmp_path)
    studio = Studio(Session(Workspace(root)), token="s3cret")
    with TestClient(make_app(studio, host="0.0.0.0", watch=False)) as client:
        assert client.get("/api/specs").status_code == 401
        assert client.get("/api/specs", headers={"authorization": "Bearer nope"}).status_code == 401
        assert client.get("/api/specs", headers={"authorization": "Bearer s3cret"}).status_code == 200
        assert client.get("/api/specs?token=s3cret").status_code == 200


def test_render_shows_a_stage_for_a_chosen_item_with_its_fields(served):
    shown = api(served, "POST", "/api/render", json={"scorer": "politeness", "data": DATA, "id": "item-4"}).json()
    (stage,) = shown["prompts"]
    assert stage["stage"] == "judge" and "question 4" in stage["text"] and "answer 4" in stage["text"]
    missing = api(served, "POST", "/api/render", json={"scorer": "politeness", "data": DATA, "id": "nope"})
    assert missing.status_code == 400 and "nope" in missing.json()["error"]


def test_samples_pick_the_labelled_items_and_ids_in_their_order(served):
    api(served, "POST", "/api/labels", json={"data": DATA, "id": "item-3", "label": "yes"})
    labelled = api(served, "POST", "/api/run", json={"scorer": "politeness", "data": DATA, "sample": "labelled"})
    assert [line["id"] for line in labelled.json()["results"]] == ["item-3"]
    by_id = api(served, "POST", "/api/run", json={"scorer": "politeness", "data": DATA, "ids": ["item-4", "item-1"]})
    assert [line["id"] for line in by_id.json()["results"]] == ["item-4", "item-1"]
    bad = api(served, "POST", "/api/run", json={"scorer": "politeness", "data": DATA, "sample": "most"})
    assert bad.status_code == 400 and "sample" in bad.json()["error"]


def test_a_run_shows_its_progress_and_stops_when_cancelled(served):
    served.judge.latency_s = 0.4
    answer: dict = {}
    thread = threading.Thread(target=lambda: answer.update(api(
        served, "POST", "/api/run", json={"scorer": "politeness", "data": DATA}).json()))
    thread.start()
    deadline = time.monotonic() + 20
    while not api(served, "GET", "/api/progress").json()["running"]:
        assert time.monotonic() < deadline
        time.sleep(0.05)
    busy = api(served, "POST", "/api/run", json={"scorer": "politeness", "data": DATA})
    assert busy.status_code == 409
    assert api(served, "GET", "/api/progress").json()["total"] == len(ITEMS)
    assert api(served, "POST", "/api/cancel", json={}).json() == {"cancelled": True}
    thread.join(30)
    assert answer["cancelled"] is True and len(answer["results"]) < len(ITEMS)
    assert api(served, "GET", "/api/progress").json()["running"] is False


def test_a_file_written_by_another_editor_shows_in_the_changes(served):
    deadline = time.monotonic() + 20
    while not api(served, "GET", "/api/changes").json()["watching"]:
        assert time.monotonic() < deadline
        time.sleep(0.05)
    start = api(served, "GET", "/api/changes").json()["version"]
    (served.root / PROMPT).write_text("edited elsewhere {{ run.output_text }}\n")
    while True:
        changes = api(served, "GET", "/api/changes", params={"since": start}).json()["changes"]
        if any(c["path"] == PROMPT for c in changes):
            break
        assert time.monotonic() < deadline, changes
        time.sleep(0.1)
    assert all(not c["path"].startswith(".scorespec") for c in changes)


def _free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _started(process, port: int, timeout: float = 60) -> tuple[str, list[str]]:
    """The address the command printed (its stderr line) and the lines before it, once the port
    answers."""
    deadline = time.monotonic() + timeout
    before = []
    for line in process.stderr:
        if "open http" in line:
            break
        before.append(line)
        assert time.monotonic() < deadline
    else:
        raise AssertionError(f"the studio never said where it serves (exit {process.wait()}): {before}")
    while True:
        try:
            httpx.get(f"http://127.0.0.1:{port}/assets/studio.css")
            return line.split("open ", 1)[1].strip(), before
        except httpx.ConnectError:
            assert time.monotonic() < deadline and process.poll() is None
            time.sleep(0.05)


@pytest.mark.parametrize("host", ["127.0.0.1", "0.0.0.0"])
def test_scorespec_studio_serves_the_folder_and_off_the_loopback_warns_and_needs_its_token(tmp_path, host):
    import os
    import subprocess
    import sys
    from pathlib import Path

    root = make_folder(tmp_path)
    port = _free_port()
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parent.parent), "OPENAI_API_KEY": "test"}
    process = subprocess.Popen([sys.executable, "-m", "engine", "studio", str(root), "--port", str(port), "--host",
                                host, "--model", "openai/x", "--data", DATA], env=env, stderr=subprocess.PIPE,
                               text=True)
    try:
        shown, before = _started(process, port)
        base = f"http://127.0.0.1:{port}"
        if host == "127.0.0.1":
            assert shown == f"{base}/?data={DATA}"
            assert "politeness" in [s["id"] for s in httpx.get(base + "/api/specs").json()["specs"]]
            page = httpx.get(base + "/")
            assert page.status_code == 200 and "default-src 'self'" in page.headers["content-security-policy"]
        else:
            token = shown.split("token=", 1)[1].split("&", 1)[0]
            assert len(token) >= 20
            assert "warning: serving on 0.0.0.0" in "".join(before)
            assert httpx.get(base + "/api/specs").status_code == 401
            assert httpx.get(base + "/api/specs", headers={"authorization": f"Bearer {token}"}).status_code == 200
    finally:
        process.terminate()
        process.communicate(timeout=20)


def test_agreement_figures_of_the_session_runs_against_the_labels(served):
    served.judge.reply = lambda request: {"verdict": "no" if "answer 2" in str(request["messages"]) else "yes",
                                          "reason": "judged"}
    run = api(served, "POST", "/api/run", json={"scorer": "politeness", "data": DATA}).json()
    for item_id, label in (("item-1", "yes"), ("item-2", "no"), ("item-3", "no")):
        api(served, "POST", "/api/labels", json={"data": DATA, "id": item_id, "label": label})
    (binary,) = api(served, "GET", "/api/agreement", params={"data": DATA, "positive": "yes"}).json()["runs"]
    assert (binary["runId"], binary["n"]) == (run["runId"], 3)
    figures = binary["figures"]
    assert figures["confusion"] == {"tp": 1, "fp": 1, "tn": 1, "fn": 0}
    assert figures["balancedAccuracy"] == 0.75 and figures["threshold"] == run["cutoff"]
    assert set(figures["cohenKappa"]) >= {"value", "ci"}
    graded = api(served, "GET", "/api/agreement", params={"data": DATA})
    assert graded.status_code == 400 and "number" in graded.json()["error"]


def test_the_changed_sample_runs_the_items_whose_verdict_changed_between_the_last_two_runs(served):
    body = {"scorer": "politeness", "data": DATA, "sample": "changed"}
    assert len(api(served, "POST", "/api/run", json=body).json()["results"]) == len(ITEMS)  # one run: every item
    (served.root / PROMPT).write_text((served.root / PROMPT).read_text() + "\nBe strict.\n")
    served.judge.reply = lambda request: {"verdict": "no" if "answer 3" in str(request["messages"]) else "yes",
                                          "reason": "judged"}
    api(served, "POST", "/api/run", json={"scorer": "politeness", "data": DATA})
    again = api(served, "POST", "/api/run", json=body).json()
    assert [(line["id"], line["score"]) for line in again["results"]] == [("item-3", 0.0)]
    assert (again["judgeCalls"], again["cachedCalls"]) == (0, 1)
