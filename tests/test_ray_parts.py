"""The Ray executor's parts that need no cluster: reading a file opened elsewhere (as Ray Data's
read tasks do) gives the items one process reads; a scorer rebuilt from its recipe (spec text and
hash) scores as the original; shard lines merge once by identity; options and flags are checked
before anything starts. (On a real cluster: `test_ray.py`.)"""

from __future__ import annotations

import io
import json
import pickle
from pathlib import Path

import pytest

from engine.api import run_evals
from engine.bind.load import load_scorer
from engine.bind.recipe import scorer_recipe
from engine.bind.stack import make_judge
from engine.judge.retries import RetryPolicy
from engine.judge.recipe import JudgeRecipe, cache_setting, judge_recipe
from engine.ray.cluster import RayOptions, _loopback, this_engine
from engine.ray.shards import recover, shard_folder
from engine.run.items import DatasetError
from engine.run.outfile import OutWriter, out_line
from engine.run.readers import format_of, read_file, read_stream
from engine.run.resume import PriorResults
from engine.spec.catalog import list_specs
from engine.spec.compile import load_spec
from engine.spec.snapshot import SpecHashMismatch, compile_kept
from engine.testing import FakeJudge
from engine.testing.fake_openai import FakeOpenAIServer

ITEMS = [{"id": "a", "output": "Paris is in France.", "context": ["Paris is in France.", "It rains."],
          "ground_truth": "Paris, France"},
         {"output": [{"role": "assistant", "content": "Hi"}], "input": "Hello", "n": 3},
         {"id": 7, "output": "x", "tool_calls": [{"name": "search", "arguments": {"q": "x"}}]},
         {"id": "a", "output": "the same id again"}]


def _problems(read, *args) -> tuple[list, list[str]]:
    found: list[str] = []
    items = list(read(*args, lambda p: found.append(p.render())))
    return items, found


@pytest.mark.parametrize("fmt", ["jsonl", "json", "csv", "parquet"])
def test_a_file_read_as_a_stream_gives_the_items_read_file_gives(tmp_path, fmt):
    pd = pytest.importorskip("pandas")
    path = tmp_path / f"items.{fmt}"
    if fmt == "jsonl":
        path.write_text("".join(json.dumps(i) + "\n" for i in ITEMS) + "{broken\n", encoding="utf-8")
    elif fmt == "json":
        path.write_text(json.dumps(ITEMS), encoding="utf-8")
    elif fmt == "csv":
        path.write_text("id,output,ground_truth\n1,hello,hi\n2,\"[\"\"a\"\"]\",x\n3,too,many,cells\n1,again,x\n",
                        encoding="utf-8")
    else:
        pytest.importorskip("pyarrow")
        pd.DataFrame([{"id": f"p{i}", "output": f"o{i}", "context": ["c1", "c2"]} for i in range(3)]).to_parquet(path)
    local, local_problems = _problems(read_file, path, {})
    with open(path, "rb") as f:
        streamed, stream_problems = _problems(read_stream, io.BufferedReader(f), str(path), {})
    assert streamed == local and stream_problems == local_problems
    assert local, "the file has items"
    if fmt in ("jsonl", "csv"):
        assert any("duplicate id" in p for p in local_problems)  # skipped where it is read, as locally


def test_parquet_rows_keep_their_lists_and_get_their_position_as_id(tmp_path):
    pd = pytest.importorskip("pandas")
    pytest.importorskip("pyarrow")
    path = tmp_path / "items.parquet"
    pd.DataFrame([{"output": "o", "context": ["c1", "c2"], "input": "q"}] * 2).to_parquet(path)
    items = list(read_file(path))
    assert [i["id"] for i in items] == [1, 2] and items[0]["context"] == ["c1", "c2"]


def test_the_format_comes_from_the_name_compression_aside():
    assert [format_of(n) for n in ("s3://b/x.jsonl.gz", "a.parquet", "x.tsv", "x.json", "x.txt")] == \
        ["jsonl", "parquet", "tsv", "json", None]
    with pytest.raises(DatasetError, match="cannot tell the format"):
        list(read_stream(io.BytesIO(b""), "items.txt"))


def test_every_shipped_spec_compiles_from_its_kept_text_to_its_own_hash():
    specs = [e.id for e in list_specs() if not e.abstract]
    assert len(specs) > 20
    for spec in specs:
        plan = load_spec(spec)
        again = compile_kept({"sources": plan.sources, "templates": plan.templates}, plan.hash)
        assert (again.hash, again.id, len(again.stages)) == (plan.hash, plan.id, len(plan.stages))
    plan = load_spec("faithfulness")
    edited = {**plan.templates, "faithfulness/verify_claim.j2": plan.templates["faithfulness/verify_claim.j2"] + "!"}
    with pytest.raises(SpecHashMismatch, match="faithfulness"):
        compile_kept({"sources": plan.sources, "templates": edited}, plan.hash)


def test_a_scorer_rebuilt_from_its_recipe_scores_as_the_original():
    with FakeOpenAIServer(lambda r: {"claims": ["Paris is in France."]} if "preprocess" in json.dumps(r["tools"])
                          else {"verdict": "yes", "reason": "said"}) as server:
        judge = make_judge("openai/m", base_url=server.base_url, api_key="secret-key", timeout_s=7,
                           retry=RetryPolicy(max_retries=1, base_s=0.01))
        original = load_scorer("faithfulness", judge=judge, label="faith").with_samples(None)
        recipe = scorer_recipe(original)
        blob = pickle.dumps(recipe)
        assert b"secret-key" not in blob  # a key never travels with a recipe
        rebuilt = pickle.loads(blob).build()
        kwargs = {"output": "Paris is in France.", "context": ["Paris is in France."], "run_id": "r"}
        a, b = original.run(**kwargs).to_json_dict(), rebuilt.run(**kwargs).to_json_dict()
        assert recipe.judge == JudgeRecipe("openai/m", server.base_url, None, 7,
                                           RetryPolicy(max_retries=1, base_s=0.01))
    assert (rebuilt.label, rebuilt.model, rebuilt.plan.hash) == ("faith", "openai/m", original.plan.hash)
    a["usage"].pop("seconds"), b["usage"].pop("seconds")
    for stage in ("preprocess", "analyze"):
        a["stages"][stage]["usage"].pop("seconds"), b["stages"][stage]["usage"].pop("seconds")
    assert a == b and a["score"] == 1


def test_a_judge_rebuilt_from_its_recipe_asks_a_reasoning_model_as_the_original():
    # a gateway alias the price table does not know, said to follow OpenAI's reasoning rules: no
    # temperature, max_completion_tokens instead of max_tokens (OpenAI's chat completions reference)
    with FakeOpenAIServer({"verdict": "yes", "reason": "said"}) as server:
        judge = make_judge("openai/team-judge", base_url=server.base_url, api_key="k", family="reasoning",
                           reasoning_tokens=1024, retry=RetryPolicy(max_retries=1, base_s=0.01))
        original = load_scorer("criteria", judge=judge, options={"criterion": "polite"})
        rebuilt = pickle.loads(pickle.dumps(scorer_recipe(original))).build()
        original.run(output="Thanks!")
        rebuilt.run(output="Thanks!")
        first, second = server.requests
    assert judge_recipe(rebuilt.judge).family == "reasoning"
    assert judge_recipe(rebuilt.judge).reasoning_tokens == 1024
    for request in (first, second):
        assert "temperature" not in request and "max_tokens" not in request
    assert first["max_completion_tokens"] == second["max_completion_tokens"] > 1024


def test_a_recipe_keeps_the_samples_the_options_and_the_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")
    scorer = load_scorer("faithfulness", model="openai/m", cache=True, options={"scale": 10}).with_samples(3)
    recipe = scorer_recipe(scorer)
    assert recipe.judge.base_url == "http://127.0.0.1:9/v1"  # the driver's endpoint, made explicit
    assert recipe.cache is True  # the default file: each node's own
    assert recipe.options["scale"] == 10 and set(recipe.sampling.values()) == {3}
    assert [s.sampling.n for s in recipe.build().plan.stages if getattr(s, "sampling", None)] == \
        [s.sampling.n for s in scorer.plan.stages if getattr(s, "sampling", None)]
    path = tmp_path / "c.sqlite"
    other = load_scorer("faithfulness", model="openai/m", cache=str(path))
    assert cache_setting(other.judge) == (str(path), False)
    assert judge_recipe(FakeJudge({})) is None


def test_a_scorer_whose_judge_cannot_be_rebuilt_is_refused_before_ray_starts(tmp_path):
    embedded = load_scorer("faithfulness", model="openai/m")
    embedded.model = "local"  # as load_scorer(model="local") makes it, without needing scorespec[local] here
    with pytest.raises(ValueError, match="served over HTTP"):
        scorer_recipe(embedded)  # refused before its judge is built (which would load the model)
    assert embedded._judge is None
    scorer = load_scorer("faithfulness", judge=FakeJudge({}))
    with pytest.raises(ValueError, match="cannot build it again"):
        scorer_recipe(scorer)
    with pytest.raises(ValueError, match="cannot build it again"):
        run_evals([{"output": "x"}], [scorer], executor="ray", store=False)


def _line(item: str, label: str, run: str = "run1", spec_hash: str = "h", failed: bool = False) -> dict:
    result = {"runId": run, "scorer": label, "label": label, "specHash": spec_hash, "score": None if failed else 1.0,
              "error": {"kind": "judge", "message": "x"} if failed else None, "notScorable": None}
    return out_line(item, result)


def test_shard_lines_merge_once_by_run_item_label_and_spec_hash(tmp_path):
    out = tmp_path / "out.jsonl"
    folder = shard_folder("run1", out, None)
    assert folder == tmp_path / "out.jsonl.shards"
    folder.mkdir()
    first, second = OutWriter(folder / "actor-1-a.jsonl"), OutWriter(folder / "actor-2-b.jsonl")
    for line in (_line("i1", "f"), _line("i2", "f", failed=True), _line("i3", "f", run="run0"),
                 _line("i4", "f", spec_hash="other"), _line("i5", "g")):
        first.write(line)
    for line in (_line("i1", "f"), _line("i2", "f"), _line("i6", "f", failed=True)):  # a retried batch's lines
        second.write(line)
    first.close(), second.close()
    (folder / "actor-2-b.jsonl").open("ab").write(b'{"id": "i7", "sco')  # a torn last line
    prior = PriorResults(run_id="run1", resuming=True)
    prior.note(("i6", "f"), _line("i6", "f", failed=True))
    assert recover(folder, "run1", {"f": "h"}, prior, out, None) == 2
    merged = [json.loads(raw) for raw in out.read_text().splitlines()]
    assert sorted((m["id"], m["error"] is None) for m in merged) == [("i1", True), ("i2", True)]
    assert prior.done(("i1", "f")) and prior.done(("i2", "f")) and not prior.done(("i6", "f"))
    assert recover(folder, "run1", {"f": "h"}, prior, out, None) == 0  # nothing twice


def test_ray_settings_are_checked_before_anything_starts():
    with pytest.raises(ValueError, match="actors"):
        RayOptions(actors=0)
    with pytest.raises(ValueError, match="CPUs per actor"):
        RayOptions(cpus_per_actor=0)
    with pytest.raises(ValueError, match="4 actors × 0.5 CPU = 2 CPUs, but the local Ray has 2"):
        RayOptions(actors=4).check_local(2, 0.25)  # the reads would wait for ever
    RayOptions(actors=3).check_local(2, 0.25)
    with pytest.raises(ValueError, match="executor"):
        run_evals([{"output": "x"}], ["textual_difference"], executor="spark", store=False)
    with pytest.raises(ValueError, match="executor='ray'"):
        run_evals([{"output": "x"}], ["textual_difference"], ray={"actors": 2}, store=False)
    with pytest.raises(ValueError, match="ray settings"):
        run_evals([{"output": "x"}], ["textual_difference"], executor="ray", ray={"workers": 2}, store=False)
    with pytest.raises(ValueError, match="max_cost"):
        run_evals([{"output": "x"}], ["textual_difference"], executor="ray", max_cost=1.0, store=False)
    assert _loopback("127.0.0.1:6379") and _loopback("ray://localhost:10001") and not _loopback("10.0.0.5:6379")
    assert this_engine()["env_vars"]["PYTHONPATH"].split(":")[0] == str(Path(__file__).resolve().parent.parent)


def test_cli_ray_flags_need_the_ray_executor(tmp_path):
    from typer.testing import CliRunner

    import engine.cli.eval  # noqa: F401  (registers eval)
    from engine.cli.main import app

    data = tmp_path / "d.jsonl"
    data.write_text('{"output": "x"}\n')
    runner = CliRunner()
    wrong = runner.invoke(app, ["eval", "textual_difference", "--data", str(data), "--actors", "3"])
    assert wrong.exit_code == 2 and "--actors: only with --executor ray" in wrong.output
    unknown = runner.invoke(app, ["eval", "textual_difference", "--data", str(data), "--executor", "spark"])
    assert unknown.exit_code == 2 and "expected local or ray" in unknown.output
    url = runner.invoke(app, ["eval", "textual_difference", "--data", "s3://bucket/items.jsonl"])
    assert url.exit_code == 2 and "Ray executor only" in url.output
