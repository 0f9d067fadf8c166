"""`scorespec align` end to end with a scripted judge: a judge that follows a rule only once its
prompt states it, a parent at chance, an optimiser proposal that states the rule, and a child that
agrees with the labels on a test split it never saw."""

from __future__ import annotations

import json
from pathlib import Path

from engine import load_scorer
from engine.alignment.loop import align
from engine.spec.compile import load_spec, validate_specs
from engine.testing import FakeJudge

RULE = "RULE-Z: a response that mentions a zebra is never supported by the knowledge."


def _data(path: Path, n: int = 80) -> Path:
    """Half the items mention a zebra (labelled hallucinated), half do not (faithful); each
    item's text is unique, so any leak of a test item into a file can be found."""
    rows = []
    for i in range(n):
        zebra = i % 2 == 0
        rows.append({"id": f"item-{i}", "input": f"Question number {i}?",
                     "context": [f"Passage {i} says the park has lions and giraffes."],
                     "output": f"Answer {i}: the park has {'a zebra' if zebra else 'lions'} (token T{i:03d}X).",
                     "label": "hallucinated" if zebra else "faithful"})
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def _judge() -> FakeJudge:
    def analyze(call):
        prompt = call.messages[-1]["content"]
        response = prompt.rsplit("Response: <<<", 1)[1].split(">>>", 1)[0]
        if RULE in prompt:  # the rule is stated: follow it
            return {"verdict": "no" if "zebra" in response else "yes"}
        return {"verdict": "yes"}  # no rule: everything looks supported

    def propose(call):
        prompt = call.messages[-1]["content"]
        assert "the score should be low" in prompt  # it reads the train disagreements
        return {"diagnosis": "Zebras are not in the knowledge.",
                "instructions": "Is the response fully supported by the knowledge? " + RULE + " Answer yes or no."}

    return FakeJudge({"analyze": analyze, "propose": propose})


def test_align_finds_the_rule_and_the_child_agrees_on_the_held_out_test_split(tmp_path):
    data = _data(tmp_path / "labelled.jsonl")
    judge = _judge()
    parent = load_scorer("faithfulness_quick", judge=judge)
    result = align(parent, data, positive=["faithful"], negative=["hallucinated"], out_dir=tmp_path / "out",
                   name="quick_zebra", seed=7, candidates=4)
    assert result.split == {"train": 40, "dev": 20, "test": 20}
    assert result.test is not None and result.chosen == "quick_zebra_i1"
    assert result.test.parent.balanced_accuracy <= 0.6
    assert result.test.child.balanced_accuracy >= 0.9
    assert result.test.mcnemar.p_value < 0.05 and result.test.better
    # the optimiser proposed instruction text that states the rule; the candidate's prompt has it
    proposals = [c.messages[-1]["content"] for c in judge.calls if c.stage == "propose"]
    assert len(proposals) == 1
    candidate_prompt = tmp_path / "out" / ".scorespec-align" / "quick_zebra" / "prompts" / "quick_zebra_i1" / "judge.j2"
    assert RULE in candidate_prompt.read_text(encoding="utf-8")
    child = tmp_path / "out" / "scorer_specs" / "quick_zebra.yaml"
    assert RULE in (tmp_path / "out" / "prompts" / "quick_zebra" / "judge.j2").read_text(encoding="utf-8")
    # the child validates and extends the parent
    assert validate_specs([child.parent]) == {child: []}
    plan = load_spec(child)
    assert plan.chain[:2] == ("quick_zebra", "faithfulness_quick")
    text = child.read_text(encoding="utf-8")
    assert "SHA-256" in text and "seed 7" in text and "Test: balanced accuracy" in text
    # no test item's text is in any candidate's files, nor in the child's
    test_ids = _test_ids(data, result, judge)
    files = [p for p in (tmp_path / "out").rglob("*") if p.is_file() and p.suffix in (".yaml", ".j2")]
    assert len(files) >= 6
    for content in [p.read_text(encoding="utf-8") for p in files] + proposals:
        for i in test_ids:
            assert f"T{i:03d}X" not in content, i
    # the item-rendering part of the prompt is the parent's, verbatim
    parent_prompt = load_spec("faithfulness_quick").stages[1].template.source
    assert candidate_prompt.read_text(encoding="utf-8").split("{% block instructions %}")[0] == \
        parent_prompt.split("{% block instructions %}")[0]
    record = json.loads((tmp_path / "out" / "quick_zebra.align.json").read_text(encoding="utf-8"))
    assert set(record) >= {"parent", "child", "split", "candidates", "test"}
    assert set(record["test"]["parent"]) >= {"balancedAccuracy", "rocAuc", "n"}
    assert record["test"]["mcnemar"]["pValue"] == result.test.mcnemar.p_value
    assert {c["strategy"] for c in record["candidates"]} == {"instructions", "examples", "cutoff", "scoring"}


def _test_ids(data: Path, result, judge) -> list[int]:
    """The test items: those the judge saw only after the choice (in the last batch)."""
    from engine.alignment.split import stratified_split

    rows = [json.loads(line) for line in data.read_text(encoding="utf-8").splitlines()]
    split = stratified_split({r["id"]: r["label"] == "faithful" for r in rows}, seed=7)
    assert len(split.test) == result.split["test"]
    return [int(k.split("-")[1]) for k in split.test]


def _server_reply(request: dict):
    """The fake OpenAI server as the scripted judge: the optimiser's call (its schema asks for
    instructions) gets the rule; a judge call follows the rule only when its prompt states it."""
    from engine.testing.schema_answers import schema_of_request

    schema = schema_of_request(request) or {}
    text = "\n".join(str(m.get("content")) for m in request["messages"])
    if "instructions" in (schema.get("properties") or {}):
        return {"diagnosis": "Zebras are not in the knowledge.",
                "instructions": "Is the response fully supported by the knowledge? " + RULE + " Answer yes or no."}
    response = text.rsplit("Response: <<<", 1)[1].split(">>>", 1)[0]
    return {"verdict": "no" if RULE in text and "zebra" in response else "yes"}


def test_align_cli_writes_a_child_that_validates_and_prints_the_json_record(tmp_path, monkeypatch):
    from typer.testing import CliRunner

    import engine.cli.eval  # noqa: F401  (registers the batch commands, align among them)
    from engine.cli.main import app
    from engine.testing.fake_openai import FakeOpenAIServer

    data = _data(tmp_path / "labelled.jsonl", 40)
    monkeypatch.chdir(tmp_path)
    env = {"COLUMNS": "200", "SCORESPEC_MODEL": None, "OPENAI_API_KEY": "test", "OPENAI_BASE_URL": None,
           "SCORESPEC_CACHE": str(tmp_path / "cache")}
    with FakeOpenAIServer(_server_reply) as server:
        args = ["align", "faithfulness_quick", "--data", str(data), "--positive", "faithful", "--negative",
                "hallucinated", "--model", "openai/gpt-4o-mini", "--base-url", server.base_url, "--name", "zebra",
                "--out-dir", "out", "--strategies", "instructions,cutoff", "--candidates", "2", "--json",
                "--report", "align.html"]
        done = CliRunner().invoke(app, args, env=env)
        assert done.exit_code == 0, done.output
        record = json.loads(done.stdout.strip().splitlines()[-1])
        assert {"parent", "child", "split", "candidates", "test"} <= set(record)
        assert record["parent"] == "faithfulness_quick" and record["child"] == "zebra"
        assert record["split"] == {"train": 20, "dev": 10, "test": 10}
        assert [c["strategy"] for c in record["candidates"]] == ["instructions", "cutoff"]
        assert record["test"]["child"]["balancedAccuracy"] == 1.0 and record["test"]["parent"]["n"] == 10
        assert "pValue" in record["test"]["mcnemar"]
        assert "RULE-Z" in (tmp_path / "align.html").read_text(encoding="utf-8")
        again = CliRunner().invoke(app, args, env=env)  # the child exists: not overwritten
        assert again.exit_code == 2 and "not overwriting" in again.output
        resumed = CliRunner().invoke(app, [*args, "--resume"], env=env)
        assert resumed.exit_code == 0, resumed.output
        assert json.loads(resumed.stdout.strip().splitlines()[-1])["test"] == record["test"]
    valid = CliRunner().invoke(app, ["validate", "out/scorer_specs"], env=env)
    assert valid.exit_code == 0, valid.output


def test_align_stops_at_the_budget_with_exit_3(tmp_path, monkeypatch):
    from typer.testing import CliRunner

    import engine.cli.eval  # noqa: F401
    from engine.cli.main import app
    from engine.testing.fake_openai import FakeOpenAIServer

    data = _data(tmp_path / "labelled.jsonl", 40)
    monkeypatch.chdir(tmp_path)
    env = {"COLUMNS": "200", "SCORESPEC_MODEL": None, "OPENAI_API_KEY": "test", "OPENAI_BASE_URL": None,
           "SCORESPEC_CACHE": str(tmp_path / "cache")}
    with FakeOpenAIServer(_server_reply) as server:
        done = CliRunner().invoke(app, ["align", "faithfulness_quick", "--data", str(data), "--positive", "faithful",
                                        "--model", "openai/gpt-4o-mini", "--base-url", server.base_url,
                                        "--max-cost", "0.00001", "--json", "--quiet"], env=env)
    assert done.exit_code == 3, done.output
    record = json.loads(done.stdout.strip().splitlines()[-1])
    assert record["stopped"] and record["child"] is None
    assert not (tmp_path / "scorer_specs").exists()


def test_align_counts_the_budget_across_resumes(tmp_path, monkeypatch):
    from typer.testing import CliRunner

    import engine.cli.eval  # noqa: F401
    from engine.cli.main import app
    from engine.testing.fake_openai import FakeOpenAIServer

    data = _data(tmp_path / "labelled.jsonl", 40)
    monkeypatch.chdir(tmp_path)
    env = {"COLUMNS": "200", "SCORESPEC_MODEL": None, "OPENAI_API_KEY": "test", "OPENAI_BASE_URL": None,
           "SCORESPEC_CACHE": str(tmp_path / "cache")}
    with FakeOpenAIServer(_server_reply) as server:
        args = ["align", "faithfulness_quick", "--data", str(data), "--positive", "faithful",
                "--model", "openai/gpt-4o-mini", "--base-url", server.base_url, "--json", "--quiet", "--no-cache"]
        first = CliRunner().invoke(app, [*args, "--max-cost", "0.00001"], env=env)
        asked = len(server.requests)
        again = CliRunner().invoke(app, [*args, "--max-cost", "0.00001", "--resume"], env=env)
        asked_again = len(server.requests) - asked
    assert first.exit_code == 3, first.output
    spent = json.loads(first.stdout.strip().splitlines()[-1])["costUsd"]
    assert spent > 0.00001 and asked > 0
    record = json.loads(again.stdout.strip().splitlines()[-1])
    assert again.exit_code == 3, again.output
    assert asked_again == 0  # the first attempt spent the budget: the resume asks nothing
    assert record["stopped"] == "the --max-cost budget is spent"
    assert abs(record["costUsd"] - spent) < 1e-12
