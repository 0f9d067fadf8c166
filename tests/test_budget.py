"""A run's budget (--max-cost): it stops cleanly before the next item would pass it (results
written, the reason said, exit code 3), resumes counting what was spent before, and refuses to
start with a judge model that has no price."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

import engine.cli.eval  # noqa: F401  (registers eval and calibrate)
from engine.bind.load import load_scorer
from engine.cli.main import app
from engine.run.budget import Budget, UnpricedModelError, check_priced, spent_before
from engine import run_evals
from engine.run.prices import PriceTable, load_prices, parse_prices
from engine.run.store import Store
from engine.testing import FakeJudge
from engine.testing.fake_openai import FakeOpenAIServer

SPEC = """\
format: 1
id: verdict
name: Verdict
description: Whether the output is right.
version: 1
fields:
  output: {required: true}
stages:
  - id: judge
    prompt: t/judge.j2
    output_schema:
      type: object
      required: [verdict]
      properties:
        verdict: {type: string, enum: ["yes", "no"]}
score:
  formula: "1 if judge.verdict == 'yes' else 0"
"""
PROMPTS = {"t/judge.j2": "Is this right?\n{{ run.output }}\n"}
PER_CALL = (1000, 250)  # tokens in and out of each FakeJudge request
PRICES = "models:\n  fake/judge: {input: 1.0, output: 2.0}\n  openai/test-model: {input: 1.0, output: 2.0}\n"
ITEM_USD = (PER_CALL[0] * 1.0 + PER_CALL[1] * 2.0) / 1e6  # one call an item


@pytest.fixture
def spec(write_spec) -> Path:
    return write_spec("verdict", SPEC, PROMPTS)


def items(n: int) -> list[dict]:
    return [{"id": i, "output": f"item {i:03d}"} for i in range(n)]  # prompts of one length: one cost an item


def prices() -> PriceTable:
    return PriceTable([parse_prices(PRICES, "test-prices.yaml")])


def scorer(spec: Path):
    return load_scorer(str(spec), judge=FakeJudge({"judge": {"verdict": "yes"}}, tokens=PER_CALL))


# --- the budget alone ---------------------------------------------------------------------------------


def test_budget_admits_one_item_until_a_cost_is_known_then_as_many_as_fit():
    async def main() -> list[str]:
        budget = Budget(0.25)
        seen = []
        assert await budget.admit()  # the first item: nothing is known yet
        waiting = asyncio.ensure_future(budget.admit())
        await asyncio.sleep(0.01)
        assert not waiting.done()  # no second item before the first one's cost is known
        budget.finished(0.1)
        assert await waiting  # 0.1 spent + this one = 0.2 ≤ 0.25
        seen.append(f"{budget.in_flight} in flight")
        assert not await budget.admit()  # 0.1 spent + 1 in flight + this one = 0.3 > 0.25
        seen.append(budget.stopped)
        return seen

    in_flight, stopped = asyncio.run(main())
    assert in_flight == "1 in flight"
    assert stopped == "the budget of $0.25 would be passed by the next item ($0.10 spent, about $0.10 an item, " \
                      "1 item(s) in flight)"


def test_budget_estimates_from_earlier_attempts_until_this_one_finishes_an_item():
    async def main() -> bool:
        budget = Budget(1.0, spent_before=0.9, items_before=9)  # 0.1 an item so far
        return await budget.admit()

    assert asyncio.run(main()) is True
    assert asyncio.run(Budget(0.95, spent_before=0.9, items_before=9).admit()) is False


def test_budget_must_be_a_positive_number():
    for bad in (0, -1, float("nan"), True, "5"):
        with pytest.raises(ValueError, match="max_cost"):
            Budget(bad)


def test_check_priced_names_the_model_and_the_price_table():
    shipped = load_prices()
    check_priced(["openai/gpt-4o-mini", "local", None], shipped)
    with pytest.raises(UnpricedModelError) as info:
        check_priced(["openai/gpt-4o-mini", "fake/judge"], shipped)
    assert "'fake/judge' has none in prices from the shipped table (taken 2025-10-01)" in str(info.value)


def test_spent_before_counts_each_earlier_result_at_the_prices():
    spent = {("1", "a"): ("fake/judge", 1000, 250), ("1", "b"): ("local", 99, 9), ("2", "a"): ("nowhere/x", 5, 5)}
    usd, n = spent_before(spent, prices())
    assert usd == pytest.approx(ITEM_USD) and n == 2


# --- a run under a budget ------------------------------------------------------------------------------


@pytest.mark.parametrize("concurrency", [1, 4])
def test_run_stops_before_the_item_that_would_pass_the_budget(spec, tmp_path, concurrency):
    out = tmp_path / "out.jsonl"
    summary = run_evals(items(100), [scorer(spec)], out=out, store=tmp_path / "store.sqlite", prices=prices(),
                        max_cost=40.5 * ITEM_USD, concurrency=concurrency)
    lines = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(lines) == 40 and summary.scorers["verdict"].scored == 40
    assert all(line["costUsd"] == pytest.approx(ITEM_USD) for line in lines)
    assert (summary.verdict, summary.exit_code, summary.left, summary.items) == ("budget_reached", 3, 60, 100)
    assert summary.stopped.startswith("the budget of $0.06075 would be passed by the next item")
    assert summary.budget["spentUsd"] == pytest.approx(40 * ITEM_USD)
    with Store(tmp_path / "store.sqlite") as db:
        assert db.get_run(summary.run_id)["status"] == "stopped"


def test_resume_counts_what_was_spent_before_and_finishes_under_a_larger_budget(spec, tmp_path):
    out, store = tmp_path / "out.jsonl", tmp_path / "store.sqlite"
    first = run_evals(items(100), [scorer(spec)], out=out, store=store, prices=prices(), max_cost=40.5 * ITEM_USD)
    assert first.exit_code == 3 and len(out.read_text().splitlines()) == 40
    second = run_evals(items(100), [scorer(spec)], out=out, store=store, prices=prices(), resume=True,
                       max_cost=70.5 * ITEM_USD)
    assert second.exit_code == 3 and len(out.read_text().splitlines()) == 70  # 40 before + 30, not 40 + 70
    assert second.budget["spentBeforeUsd"] == pytest.approx(40 * ITEM_USD)
    assert second.resumed == 40 and second.scorers["verdict"].scored == 70
    last = run_evals(items(100), [scorer(spec)], out=out, store=store, prices=prices(), resume=True,
                     max_cost=100.5 * ITEM_USD)
    assert (last.verdict, last.exit_code, last.stopped, last.left) == ("passed", 0, None, 0)
    assert len(out.read_text().splitlines()) == 100 and last.scorers["verdict"].scored == 100
    assert last.budget["spentUsd"] == pytest.approx(100 * ITEM_USD)
    assert last.cost.usd == pytest.approx(30 * ITEM_USD)  # this attempt's own


def test_resume_over_a_budget_already_spent_scores_nothing(spec, tmp_path):
    out = tmp_path / "out.jsonl"
    run_evals(items(10), [scorer(spec)], out=out, store=False, prices=prices(), max_cost=5.5 * ITEM_USD)
    judge = FakeJudge({"judge": {"verdict": "yes"}}, tokens=PER_CALL)
    again = run_evals(items(10), [load_scorer(str(spec), judge=judge)], out=out, store=False, prices=prices(),
                      resume=True, max_cost=5.5 * ITEM_USD)
    assert judge.calls == [] and (again.exit_code, again.resumed, again.left) == (3, 5, 5)


def test_a_budget_needs_a_price_for_every_judge_model(spec, tmp_path):
    with pytest.raises(UnpricedModelError, match="'fake/judge' has none"):
        run_evals(items(3), [scorer(spec)], store=False, max_cost=1.0)
    with pytest.raises(ValueError, match="needs a price table"):
        run_evals(items(3), [scorer(spec)], store=False, max_cost=1.0, prices=False)
    free = run_evals([{**item, "ground_truth": "item"} for item in items(3)], ["textual_difference"], store=False,
                     max_cost=0.01)  # no judge: nothing to price
    assert (free.exit_code, free.scorers["textual_difference"].scored, free.cost.usd) == (0, 3, 0)


# --- on the command line (case C30) ---------------------------------------------------------------------


ENV = {"COLUMNS": "250", "OPENAI_API_KEY": None, "OPENAI_BASE_URL": None, "SCORESPEC_MODEL": None}


@pytest.fixture
def cli(spec, tmp_path):
    data = tmp_path / "items.jsonl"
    data.write_text("".join(json.dumps(item) + "\n" for item in items(100)), encoding="utf-8")
    price_file = tmp_path / "prices.yaml"
    price_file.write_text(PRICES, encoding="utf-8")
    with FakeOpenAIServer({"verdict": "yes"}) as server:
        def run(*args: str, data_file: Path = data):
            return CliRunner().invoke(app, [*args, str(spec), "--data", str(data_file), "--quiet", "--no-cache",
                                            "--model", "openai/test-model", "--base-url", server.base_url], env=ENV)

        yield run, price_file, tmp_path


def test_eval_max_cost_stops_with_exit_3_and_resume_finishes_the_run(cli):
    run, price_file, folder = cli
    probe_data = folder / "one.jsonl"
    probe_data.write_text(json.dumps(items(1)[0]) + "\n", encoding="utf-8")
    probe = run("eval", "--prices", str(price_file), "--out", str(folder / "probe.jsonl"), data_file=probe_data)
    assert probe.exit_code == 0, probe.output
    item_usd = json.loads((folder / "probe.jsonl").read_text())["costUsd"]  # what one item costs here
    assert item_usd > 0
    out = folder / "out.jsonl"
    stopped = run("eval", "--prices", str(price_file), "--out", str(out), "--max-cost", str(40.5 * item_usd))
    assert stopped.exit_code == 3, stopped.output
    assert len(out.read_text().splitlines()) == 40
    said = " ".join(stopped.stdout.split())
    assert "stopped: the budget of" in said and "60 item(s) left: run it again with --resume" in said
    assert "verdict: budget reached (exit 3)" in said
    resumed = run("eval", "--prices", str(price_file), "--out", str(out), "--resume", "--json",
                  "--max-cost", str(100.5 * item_usd))
    assert resumed.exit_code == 0, resumed.output
    assert len(out.read_text().splitlines()) == 100
    payload = json.loads(resumed.stdout)
    assert payload["budget"]["spentBeforeUsd"] == pytest.approx(40 * item_usd)
    assert payload["budget"]["spentUsd"] == pytest.approx(100 * item_usd)
    assert (payload["verdict"], payload["resumed"], payload["stopped"]) == ("passed", 40, None)


def test_eval_max_cost_with_a_model_without_a_price_refuses_to_start(cli):
    run, _price_file, folder = cli
    refused = run("eval", "--max-cost", "1", "--out", str(folder / "out.jsonl"))
    assert refused.exit_code == 2
    said = " ".join(refused.stderr.split())
    assert "--max-cost needs a price for every judge model, and 'openai/test-model' has none in prices from the " \
           "shipped table (taken 2025-10-01)" in said
    assert not (folder / "out.jsonl").exists()


def test_calibrate_max_cost_stops_with_exit_3_and_figures_over_the_items_scored(cli):
    run, price_file, folder = cli
    labelled = folder / "labelled.jsonl"
    labelled.write_text("".join(json.dumps({**item, "label": i % 2}) + "\n" for i, item in enumerate(items(20))),
                        encoding="utf-8")
    probe = run("calibrate", "--prices", str(price_file), "--json", "--store", str(folder / "s.sqlite"),
                data_file=labelled)
    assert probe.exit_code == 0, probe.output
    report = json.loads(probe.stdout)
    item_usd = report["costUsd"] / 20
    assert report["tokensIn"] > 0 and report["stopped"] is None
    stopped = run("calibrate", "--prices", str(price_file), "--json", "--max-cost", str(5.5 * item_usd),
                  "--store", str(folder / "s.sqlite"), data_file=labelled)
    assert stopped.exit_code == 3, stopped.output
    report = json.loads(stopped.stdout)
    assert (report["scored"], report["failed"], report["labelled"]) == (5, 0, 20)
    assert report["stopped"].startswith("the budget of")
    assert "stopped: the budget of" in " ".join(stopped.stderr.split())


def test_compare_counts_each_versions_tokens_and_cost_and_stops_at_the_budget(spec, tmp_path):
    from engine.analysis.compare import compare

    versions = [scorer(spec).with_label("a"), scorer(spec).with_label("b")]
    both = compare(versions, items(10), store=tmp_path / "store.sqlite", prices=prices())
    assert [(v.tokens_in, v.tokens_out) for v in both.versions.values()] == [(10 * PER_CALL[0], 10 * PER_CALL[1])] * 2
    assert [v.cost_usd for v in both.versions.values()] == [pytest.approx(10 * ITEM_USD)] * 2
    assert both.to_json_dict()["versions"]["b"]["costUsd"] == pytest.approx(10 * ITEM_USD)
    versions = [scorer(spec).with_label("a"), scorer(spec).with_label("b")]
    stopped = compare(versions, items(10), store=tmp_path / "store2.sqlite", prices=prices(),
                      max_cost=4.5 * 2 * ITEM_USD, concurrency=1)
    assert stopped.stopped and stopped.exit_code() == 3
