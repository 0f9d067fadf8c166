"""Price tables and cost: the shipped table (every model the README and the docs name, with its date), the
user's table over it (--prices, $SCORESPEC_PRICES, prices.yaml in the cache folder), patterns,
bad tables at their line, token sums and cost on a fixed table, a model without a price, the
embedded judge free, cache hits free; cost in results, run summaries and on the command line."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest
from conftest import ROOT
from typer.testing import CliRunner

import engine.cli.eval  # noqa: F401  (registers eval)
from engine.bind.load import load_scorer
from engine.bind.stack import make_judge
from engine.judge.retries import RetryPolicy
from engine.cli.main import app
from engine.core.result import Usage
from engine import run_evals
from engine.run.prices import SHIPPED_PRICES, PriceTable, PriceTableError, cost_of, load_prices, parse_prices, usd_text

TABLE = """\
taken: "2025-01-31"
models:
  openai/test-model: {input: 2.0, output: 8.0}
  openai/gpt-4o*: {input: 9.0, output: 9.0}
  vendor/*: {input: 1.0, output: 1.0, taken: "2024-12-01"}
"""


def table(text: str = TABLE, source: str = "prices.yaml") -> PriceTable:
    return PriceTable([parse_prices(text, source)])


# --- the tables ----------------------------------------------------------------------------------------


def test_shipped_table_prices_every_model_the_readme_and_the_docs_name_and_says_when():
    pages = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
    text = "\n".join(page.read_text(encoding="utf-8") for page in pages)
    named = set(re.findall(r"\b(?:openai|anthropic|ollama|groq|mistral|litellm)/[A-Za-z0-9._:-]*[A-Za-z0-9]", text))
    named -= {"openai/MODEL", "openai/my-finetune"}  # placeholders: a model of your own server, your own price
    assert {"openai/gpt-5-mini", "anthropic/claude-haiku-4-5", "ollama/qwen2.5:7b"} <= named
    shipped = load_prices(shipped=True)
    assert shipped.sources == [str(SHIPPED_PRICES)]
    for model in sorted(named):
        price = shipped.price(model)
        assert price is not None, model
        assert re.fullmatch(r"\d{4}-\d{2}-\d{2}", price.taken or ""), model
    mini = shipped.price("openai/gpt-5-mini")
    assert (mini.input, mini.output) == (0.25, 2.00)
    assert SHIPPED_PRICES.is_relative_to(ROOT / "engine")  # inside the package: the wheel ships it


def test_embedded_judges_cost_nothing_and_unknown_models_have_no_price():
    shipped = load_prices()
    for model in ("local", "local-tiny", "llamacpp/some/model.gguf"):
        assert shipped.cost(model, Usage(tokens_in=10_000, tokens_out=500)) == 0.0
    assert shipped.price("openai/my-own-finetune") is None
    assert shipped.cost("openai/my-own-finetune", Usage(tokens_in=1)) is None
    assert shipped.cost("openai/my-own-finetune", Usage(cache_hits=4)) == 0.0  # no tokens: nothing spent


def test_exact_keys_win_over_patterns_and_longer_patterns_over_shorter():
    prices = table(TABLE + "  vendor/big-*: {input: 5.0, output: 5.0}\n")
    assert prices.price("openai/gpt-4o").key == "openai/gpt-4o*"
    assert prices.price("vendor/big-one").key == "vendor/big-*"
    assert prices.price("vendor/small").key == "vendor/*"
    assert prices.price("vendor/small").taken == "2024-12-01"
    assert prices.price("openai/test-model").taken == "2025-01-31"


def test_the_users_table_goes_before_the_shipped_one(tmp_path):
    mine = tmp_path / "mine.yaml"
    mine.write_text("models:\n  openai/gpt-4o-mini: {input: 0.1, output: 0.2}\n", encoding="utf-8")
    prices = load_prices(mine)
    assert prices.sources == [str(mine), str(SHIPPED_PRICES)]
    assert (prices.price("openai/gpt-4o-mini").input, prices.price("openai/gpt-4o-mini").source) == (0.1, str(mine))
    assert prices.price("openai/gpt-4o").source == str(SHIPPED_PRICES)
    assert prices.describe() == f"prices from {mine}, then the shipped table (taken 2025-10-01)"


def test_the_users_table_is_found_in_the_environment_or_the_cache_folder(tmp_path, monkeypatch):
    cached = Path(os.environ["SCORESPEC_CACHE"]) / "prices.yaml"
    assert load_prices().sources == [str(SHIPPED_PRICES)]
    cached.write_text("models:\n  vendor/a: {input: 1, output: 1}\n", encoding="utf-8")
    try:
        assert load_prices().price("vendor/a").source == str(cached)
        named = tmp_path / "named.yaml"
        named.write_text("models:\n  vendor/b: {input: 1, output: 1}\n", encoding="utf-8")
        monkeypatch.setenv("SCORESPEC_PRICES", str(named))
        assert load_prices().sources == [str(named), str(SHIPPED_PRICES)]
        monkeypatch.setenv("SCORESPEC_PRICES", str(tmp_path / "gone.yaml"))
        with pytest.raises(PriceTableError, match=r"\$SCORESPEC_PRICES .*gone.yaml: no such file"):
            load_prices()
    finally:
        cached.unlink()
    with pytest.raises(PriceTableError, match="--prices .*nowhere.yaml: no such file"):
        load_prices(tmp_path / "nowhere.yaml")


def test_a_bad_table_names_every_problem_at_its_line():
    text = "models:\n  a/b: {input: -1, output: 2}\n  a/c: {input: 1, ouptut: 2}\n  a/d: 3\nextra: 1\n"
    with pytest.raises(PriceTableError) as info:
        parse_prices(text, "bad.yaml")
    lines = str(info.value).splitlines()
    assert "bad.yaml:2:" in lines[0] and "models.a/b.input" in lines[0] and "not -1" in lines[0]
    assert any("bad.yaml:3:" in line and "models.a/c.ouptut: unknown key (did you mean 'output'?)" in line
               for line in lines)
    assert any("bad.yaml:3:" in line and "output: a price" in line for line in lines)
    assert any("bad.yaml:4:" in line and "models.a/d" in line for line in lines)
    assert any("bad.yaml:5:" in line and "extra: unknown key" in line for line in lines)
    with pytest.raises(PriceTableError, match="a mapping with `models:`"):
        parse_prices("- 1\n", "list.yaml")


# --- cost -----------------------------------------------------------------------------------------------


def test_cost_on_a_fixed_table_and_a_model_without_a_price():
    prices = table()
    cost = cost_of({"openai/test-model": Usage(tokens_in=1_500_000, tokens_out=250_000),
                    "vendor/x": Usage(tokens_in=1_000_000, tokens_out=0), None: Usage(tokens_in=9)}, prices)
    assert cost.by_model == {"openai/test-model": pytest.approx(3.0 + 2.0), "vendor/x": pytest.approx(1.0)}
    assert cost.usd == pytest.approx(6.0) and cost.complete and cost.note is None
    partial = cost_of({"openai/test-model": Usage(tokens_in=1_000_000), "nowhere/m": Usage(tokens_in=5)}, prices)
    assert partial.usd == pytest.approx(2.0) and partial.unpriced == ("nowhere/m",)
    assert partial.by_model["nowhere/m"] is None
    assert "no price for nowhere/m in prices from prices.yaml (taken 2025-01-31): tokens only" in partial.note
    none = cost_of({"nowhere/m": Usage(tokens_in=5)}, prices)
    assert none.usd is None and none.to_json_dict()["complete"] is False


@pytest.mark.parametrize(("usd", "text"), [(None, "—"), (0, "$0"), (2.5, "$2.50"), (1234.5, "$1,234.50"),
                                           (0.5, "$0.50"), (0.001234, "$0.001234"), (0.0000123, "$0.0000123")])
def test_usd_text(usd, text):
    assert usd_text(usd) == text


# --- usage and cost in a run -------------------------------------------------------------------------------


@pytest.fixture
def data(tmp_path) -> Path:
    path = tmp_path / "items.jsonl"
    path.write_text("".join(json.dumps({"id": i, "output": f"Output {i}.", "context": ["Everything holds."]}) + "\n"
                            for i in range(2)), encoding="utf-8")
    return path


def faithfulness_reply(request: dict) -> dict:
    """Two claims of the item's own output (so no two items ask the same question); all supported."""
    if request["tools"][0]["function"]["name"] == "preprocess":
        output = request["messages"][-1]["content"].rsplit("<<<\n", 1)[1].split("\n>>>", 1)[0]
        return {"claims": [f"{output} one", f"{output} two"]}
    return {"verdict": "yes", "reason": "The context says so."}


def expected_tokens(requests: list[dict], stage: str | None = None) -> tuple[int, int]:
    """What the fake server reports (`engine.testing.fake_openai`): characters // 4, at least 1."""
    tokens_in = tokens_out = 0
    for r in requests:
        if stage is None or r["tools"][0]["function"]["name"] == stage:
            tokens_in += max(1, sum(len(m["content"]) for m in r["messages"] if isinstance(m.get("content"), str)) // 4)
            answer = faithfulness_reply(r)
            tokens_out += max(1, len(json.dumps(answer)) // 4)
    return tokens_in, tokens_out


def test_tokens_per_stage_and_model_and_cost_in_results_and_the_summary(data, tmp_path):
    from engine.testing.fake_openai import FakeOpenAIServer

    out = tmp_path / "out.jsonl"
    with FakeOpenAIServer(faithfulness_reply) as server:
        judge = make_judge("openai/test-model", base_url=server.base_url, api_key="test",
                           retry=RetryPolicy(max_retries=0, base_s=0.01))
        scorer = load_scorer("faithfulness", judge=judge)
        summary = run_evals(str(data), [scorer], out=out, store=False, prices=table(), concurrency=1)
        requests = list(server.requests)
    lines = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(requests) == 6 and len(lines) == 2
    tokens_in, tokens_out = expected_tokens(requests)
    assert (summary.usage_by_model["openai/test-model"].tokens_in,
            summary.usage_by_model["openai/test-model"].tokens_out) == (tokens_in, tokens_out)
    assert sum(line["stages"]["analyze"]["usage"]["tokensIn"] for line in lines) == expected_tokens(requests,
                                                                                                   "analyze")[0]
    for line in lines:
        usage = line["usage"]
        assert line["costUsd"] == pytest.approx((usage["tokensIn"] * 2 + usage["tokensOut"] * 8) / 1e6)
    usd = (tokens_in * 2 + tokens_out * 8) / 1e6
    assert summary.cost.usd == pytest.approx(usd) and summary.cost_by_label["faithfulness"] == pytest.approx(usd)
    payload = summary.to_json_dict()
    assert payload["usageByModel"]["openai/test-model"]["tokensIn"] == tokens_in
    assert payload["cost"]["usd"] == pytest.approx(usd) and payload["cost"]["complete"] is True


def test_cli_prints_tokens_and_cost_per_model_and_cache_hits_cost_nothing(data, tmp_path):
    from engine.testing.fake_openai import FakeOpenAIServer

    prices = tmp_path / "prices.yaml"
    prices.write_text(TABLE, encoding="utf-8")
    env = {"COLUMNS": "250", "OPENAI_API_KEY": None, "OPENAI_BASE_URL": None, "SCORESPEC_MODEL": None}
    with FakeOpenAIServer(faithfulness_reply) as server:
        def run(*extra: str):
            return CliRunner().invoke(app, ["eval", "faithfulness", "--data", str(data), "--quiet", "--model",
                                            "openai/test-model", "--base-url", server.base_url, *extra], env=env)

        first = run("--prices", str(prices), "--json")
        requests = list(server.requests)
        again = run("--prices", str(prices))
        unpriced = run("--no-cache")
    assert first.exit_code == 0, first.output
    tokens_in, tokens_out = expected_tokens(requests)
    usd = (tokens_in * 2 + tokens_out * 8) / 1e6
    assert f"openai/test-model: {tokens_in:,} tokens in · {tokens_out:,} out · {usd_text(usd)}" in first.stderr
    assert f"cost: {usd_text(usd)} · prices from {prices} (taken 2025-01-31), then the shipped table" in first.stderr
    assert json.loads(first.stdout)["cost"]["usd"] == pytest.approx(usd)
    assert again.exit_code == 0
    assert "openai/test-model: 0 tokens in · 0 out · $0 · 6 cache hits (free)" in again.stdout
    assert "cost: $0 ·" in again.stdout
    assert unpriced.exit_code == 0
    assert f"openai/test-model: {tokens_in:,} tokens in · {tokens_out:,} out\n" in unpriced.stdout
    assert "note: no price for openai/test-model in prices from the shipped table (taken 2025-10-01): tokens only" \
        in " ".join(unpriced.stdout.split())
