"""The HTML report without a browser: what `engine.report.data` reads, what `engine.report.html`
writes (the data blob, escaping, the Content-Security-Policy, figures and charts), and the
`scorespec report` command and ``--report`` on eval and calibrate. Browser tests:
tests/test_html_report_browser.py."""

from __future__ import annotations

import base64
import hashlib
import importlib.util
import json
import re
from pathlib import Path

import pytest
from report_runs import HOSTILE_CLAIM, HOSTILE_ERROR, HOSTILE_ID, HOSTILE_REASON, calibrate_run, eval_run
from typer.testing import CliRunner

import engine.cli.eval  # noqa: F401 - registers the batch commands, report among them
from engine.analysis.judge_stats import roc_points
from engine.cli.main import app
from engine.report.charts import DISTINCT_BARS, histogram_bins, scatter_points
from engine.report.data import ReportError, load_run, run_from_out_file, usage_totals
from engine.report.html import render_report, report_json
from engine.run.store import Store

# the paired statistics of `scorespec compare` (interval, test), when this scorespec has them
HAS_STATS = importlib.util.find_spec("engine.analysis.compare_stats") is not None
COUNTS = "B better / tied / worse" if HAS_STATS else "B higher / equal / lower"
SPECS = Path(__file__).resolve().parent / "specs"
NUMERIC = str(SPECS / "numeric.yaml")  # rule-only: the score is the output read as a number


@pytest.fixture
def store(tmp_path) -> Path:
    return tmp_path / "store.sqlite"


def _blob(page: str) -> dict:
    match = re.search(r'<script type="application/json" id="report-data">(.*?)</script>', page, re.S)
    assert match, "no data blob"
    return json.loads(match.group(1))


# --- reading a run ------------------------------------------------------------------------------


def test_a_stored_run_by_id_prefix_and_by_its_out_file(store, tmp_path):
    out = tmp_path / "out.jsonl"
    run_id = eval_run(store, 12, out=out)
    with Store(store) as db:
        by_prefix = load_run(run_id[:-2], db)
        by_file = load_run(str(out), db)
    for run in (by_prefix, by_file):
        assert (run.run_id, run.source, run.labels) == (run_id, "store", ["faithfulness"])
        assert len(run.lines) == 12 and len(run.items) == 12
        assert run.items[HOSTILE_ID]["output"].endswith(HOSTILE_CLAIM)


def test_an_out_file_alone(tmp_path):
    out = tmp_path / "out.jsonl"
    run_id = eval_run(tmp_path / "elsewhere.sqlite", 12, out=out)
    run = run_from_out_file(out, None)
    assert (run.run_id, run.source, run.items, len(run.lines)) == (run_id, "out file", {}, 12)
    assert run.created_at.endswith("Z")
    page = render_report(run)
    assert "Read from the out file alone" in page
    assert len(_blob(page)["rows"]) == 12


def test_the_last_line_of_an_item_wins_in_its_place(tmp_path):
    out = tmp_path / "out.jsonl"
    base = {"scorer": "numeric", "label": "numeric", "specVersion": 1, "specHash": "h"}
    lines = [{"id": 1, **base, "score": None, "error": {"kind": "transport", "message": "down"}},
             {"id": 2, **base, "score": 0.5}, {"id": 1, **base, "score": 0.9}]
    out.write_text("".join(json.dumps(line) + "\n" for line in lines))
    run = run_from_out_file(out)
    assert [(line["id"], line["score"]) for line in run.lines] == [(1, 0.9), (2, 0.5)]


@pytest.mark.parametrize("ref, message", [("nope", "no run with that id"), ("", "no run with that id")])
def test_an_unknown_run_is_a_clear_error(store, ref, message):
    eval_run(store, 3)
    with Store(store) as db, pytest.raises(ReportError, match=message):
        load_run(ref or "zzz", db)


def test_an_ambiguous_prefix_and_an_empty_out_file(store, tmp_path):
    eval_run(store, 3, run_id="same-1")
    eval_run(store, 3, run_id="same-2")
    with Store(store) as db, pytest.raises(ReportError, match="matches 2 runs"):
        load_run("same", db)
    empty = tmp_path / "empty.jsonl"
    empty.write_text("not json\n")
    with pytest.raises(ReportError, match="no result line"):
        run_from_out_file(empty)


def test_usage_totals_and_cost_fields():
    lines = [{"usage": {"calls": 2, "tokensIn": 10, "tokensOut": 3, "cacheHits": 1}},
             {"usage": {"calls": 1, "tokensIn": 5, "costUsd": 0.25}}, {"usage": None}]
    usage, costs = usage_totals(lines)
    assert (usage.calls, usage.tokens_in, usage.tokens_out, usage.cache_hits) == (3, 15, 3, 1)
    assert costs == {"costUsd": 0.25}
    assert usage_totals(lines[:1])[1] == {}


# --- what the page holds --------------------------------------------------------------------------


def test_the_data_blob_cannot_close_its_element_and_reads_back_exactly(store):
    run_id = eval_run(store, 12)
    with Store(store) as db:
        run = load_run(run_id, db)
    text = report_json(run)
    assert "<" not in text and ">" not in text and "&" not in text
    blob = json.loads(text)
    hostile = next(row for row in blob["rows"] if row["id"] == HOSTILE_ID)
    assert hostile["result"]["status"] == "scored" and HOSTILE_CLAIM in hostile["result"]["reason"]
    verdicts = hostile["result"]["stages"]["analyze"]["result"]["verdicts"]
    assert {"claim": HOSTILE_CLAIM, "verdict": "yes", "reason": HOSTILE_REASON} in verdicts
    failed = [row for row in blob["rows"] if row["result"]["status"] == "failed"]
    assert [row["id"] for row in failed] == ["item-005", "item-010"]
    assert failed[0]["result"]["error"] == {"stage": "preprocess", "kind": "transport", "message": HOSTILE_ERROR,
                                            "rawAnswer": None, "attempts": 0}
    assert blob["items"][HOSTILE_ID]["input"] == "Say something <b>bold</b>."


def test_prompts_travel_as_lines_and_join_back(store):
    run_id = eval_run(store, 4)
    with Store(store) as db:
        run = load_run(run_id, db)
    blob = json.loads(report_json(run))
    for line, row in zip(run.lines, blob["rows"]):
        for sid, record in line["stages"].items():
            sent = row["result"]["stages"][sid]["prompt"]
            rebuilt = "\n".join(blob["lines"][i] for i in sent) if sent is not None else None
            assert rebuilt == record["prompt"]
    # the instructions repeat item after item; each of their lines is kept once
    assert len(blob["lines"]) == len(set(blob["lines"]))
    assert "preprocessPrompt" not in blob["rows"][0]["result"] and "specChain" not in blob["rows"][0]["result"]


def test_hostile_text_is_escaped_in_the_page(store):
    calibrate_run(store, 12)
    with Store(store) as db:
        (found,) = db.list_runs()
        run = load_run(found["run_id"], db)
    page = render_report(run)
    # the hostile id is listed among the largest disagreements, escaped
    assert "&lt;img src=x onerror=&#34;window.__pwned=&#39;id&#39;&#34;&gt;" in page
    markup = re.sub(r'<script type="application/json" id="report-data">.*?</script>', "", page, flags=re.S)
    assert "onerror" not in markup.replace("onerror=&#34;", "")  # only as escaped text
    assert "<img src=x" not in markup and "<b>" not in markup
    assert markup.count("<script") == 1  # the page's own script; the data blob is the other
    assert page.count("<script") == 2


def test_the_content_security_policy_allows_only_the_page_itself(store):
    run = _load(store, eval_run(store, 3))
    page = render_report(run)
    policy = re.search(r'http-equiv="Content-Security-Policy" content="([^"]+)"', page).group(1)
    assert "default-src 'none'" in policy and "img-src data:" in policy
    script = re.search(r"<script>(.*?)</script>", page, re.S).group(1)
    style = re.search(r"<style>(.*?)</style>", page, re.S).group(1)
    for text, directive in ((script, "script-src"), (style, "style-src")):
        digest = base64.b64encode(hashlib.sha256(text.encode()).digest()).decode()
        assert f"{directive} 'sha256-{digest}'" in policy
    assert "http://" not in page.replace("http://www.w3.org/", "") and "https://" not in page
    assert re.findall(r'<img class="chart" src="data:image/svg\+xml;base64,', page)


def _load(store: Path, run_id: str):
    with Store(store) as db:
        return load_run(run_id, db)


def test_header_and_scorer_figures(store):
    run = _load(store, eval_run(store, 12, thresholds={"faithfulness": 0.9}))
    page = render_report(run)
    # 9 scored: 1, 1, 0.67, 0, 1, 0, 0.67, 0, 0.67 -> mean 5/9, median 0.67
    assert "9 scored · 1 not scorable · <span class=\"bad\">2 failed</span>" in page
    assert "<dt>mean</dt><dd>0.5567</dd>" in page and "<dt>median</dt><dd>0.67</dd>" in page
    assert "<dt>range</dt><dd>0–1</dd>" in page
    assert "≥ 0.9 · <span class=\"bad\">missed</span> (mean 0.5567)" in page
    assert "judge_base → scorer_base" in page and "fake/judge" in page
    assert page.count('<img class="chart"') == 1


def test_calibration_section(store):
    run = _load(store, calibrate_run(store, 12))
    assert run.calibrations["faithfulness"]["labelField"] == "label"
    page = render_report(run)
    assert "Agreement with human labels" in page
    assert 'alt="ROC curve of faithfulness"' in page and 'alt="confusion matrix of faithfulness"' in page
    # positives (faithful) score 1, 0, 0, 0.67; negatives 1, 0.67, 1, 0, 0.67: 7 of 20 pairs in order
    assert "<dt>ROC AUC</dt><dd>0.35</dd>" in page
    assert "<dt>positives</dt><dd>4</dd>" in page and "<dt>negatives</dt><dd>5</dd>" in page
    assert page.count('data-show-item="') == 5


def test_comparison_pairs_items_by_id_and_label(store):
    a = _load(store, eval_run(store, 12, run_id="run-a"))
    b = _load(store, eval_run(store, 12, run_id="run-b", strict=True))  # claims ending in 1 now unsupported
    page = render_report(a, b)
    blob = _blob(page)
    assert blob["compareRunId"] == "run-b"
    moved = {row["id"]: (row["result"]["score"], row["other"]["score"]) for row in blob["rows"]
             if row["other"] and row["result"]["score"] != row["other"]["score"]}
    # ok-1, ok-11 and ok-41 lose their support: each of these items had 2 of 2 claims supported
    assert moved == {HOSTILE_ID: (1.0, 0.5), "item-001": (1.0, 0.5), "item-004": (1.0, 0.5)}
    assert f"<dt>{COUNTS}</dt><dd>0 / 6 / 3</dd>" in page
    assert "<strong>-0.1667</strong>" in page  # 3 × −0.5 over 9 pairs
    assert "Run A (run-a) against run B (run-b)" in page
    _assert_interval_or_plain(page, [], [])


def _assert_interval_or_plain(page: str, a: list[float], b: list[float]) -> None:
    """With `engine.analysis.compare_stats`, the page shows its interval; without, it says there is none."""
    if not HAS_STATS:
        assert "no interval or test is computed here" in page
        return
    assert "no interval or test is computed here" not in page
    if a and b:
        from engine.analysis.compare_stats import paired_difference

        low, high = paired_difference(a, b).ci95
        assert f"95% interval {low:+.4g} to {high:+.4g} (bootstrap)".replace("+0 ", "0 ") in page


def test_comparison_difference_is_exact(tmp_path):
    def out_file(name: str, scores: list) -> Path:
        path = tmp_path / name
        path.write_text("".join(json.dumps({"id": i, "scorer": "numeric", "label": "numeric", "runId": name,
                                            "specVersion": 1, "specHash": "h", "score": s,
                                            **({"error": {"kind": "formula", "message": "x"}} if s is None else {})})
                                + "\n" for i, s in enumerate(scores)))
        return path

    a = run_from_out_file(out_file("a.jsonl", [0.7, 0.5, 0.1, 0.3]))
    b = run_from_out_file(out_file("b.jsonl", [0.9, 0.5, None, 0.2]))
    page = render_report(a, b)
    # pairs: (0.7, 0.9), (0.5, 0.5), (0.3, 0.2): mean difference (0.2 + 0 - 0.1) / 3
    assert "<strong>+0.03333</strong>" in page
    assert f"<dt>{COUNTS}</dt><dd>1 / 1 / 1</dd>" in page
    _assert_interval_or_plain(page, [0.7, 0.5, 0.3], [0.9, 0.5, 0.2])
    assert "<dt>status changed</dt><dd>1</dd>" in page
    movers = re.findall(r'<tr><td><code>(\d)</code></td><td>([^<]*)</td><td>([^<]*)</td>', page)
    assert movers == [("2", "0.1", "failed"), ("0", "0.7", "0.9"), ("3", "0.3", "0.2")]


def test_a_compare_run_sets_each_version_against_the_first(store):
    from report_runs import faithfulness_judge, items

    from engine import load_scorer
    from engine import run_evals

    versions = [load_scorer("faithfulness", judge=faithfulness_judge(), label="faithfulness"),
                load_scorer("faithfulness", judge=faithfulness_judge(strict=True), label="faithfulness@draft")]
    summary = run_evals(items(12), versions, store=store, config={"cli": {"command": "compare"}})
    page = render_report(_load(store, summary.run_id))
    assert "Versions against the baseline, faithfulness" in page
    assert 'faithfulness@draft <span class="dim">(B) against faithfulness (A)</span>' in page
    assert f"<dt>{COUNTS}</dt><dd>0 / 6 / 3</dd>" in page and "<strong>-0.1667</strong>" in page
    assert _blob(page)["compareRunId"] is None  # the table lists both versions' results, one row each
    assert len(_blob(page)["rows"]) == 24


# --- charts' data -------------------------------------------------------------------------------


def test_histogram_bins():
    few = histogram_bins([0, 0.5, 0.5, 1], 1)
    assert [(b["lo"], b["n"], b["name"]) for b in few] == [(0, 1, "0"), (0.5, 2, "0.5"), (1, 1, "1")]
    many = histogram_bins([i / 100 for i in range(101)], 1)
    assert len(many) == 20 and sum(b["n"] for b in many) == 101
    assert many[0]["n"] == 5 and many[-1]["n"] == 6  # 0.95 … 1.0: the last bin is closed
    assert len(histogram_bins([i / 10 for i in range(DISTINCT_BARS)], 1)) == DISTINCT_BARS


def _svg_texts(svg: str) -> list[str]:
    import re

    return re.findall(r"<text[^>]*>([^<]*)</text>", svg)


@pytest.mark.parametrize("scores, ticks", [
    ([0.5, 0.5, 1.0], [0, 1, 2]),                       # one bar per score, at most 2 items
    ([i / 10 for i in range(15)] + [0.3], [0, 1, 2]),   # binned
    ([1.0] * 37 + [0.5], [0, 10, 20, 30, 40]),
    ([1.0] * 7, [0, 2, 4, 6, 8]),
])
def test_the_histogram_counts_items_in_whole_numbers_only(scores, ticks):
    from engine.report.charts import histogram_chart, histogram_svg

    axis = histogram_chart(scores, 1, "s").to_dict()["encoding"]["y"]
    assert axis["axis"]["values"] == ticks and axis["axis"]["format"] == "d"
    assert axis["scale"]["domain"] == [0, ticks[-1]]
    texts = _svg_texts(histogram_svg(scores, 1, "s"))
    assert texts[texts.index("score") + 1:texts.index("items")] == [str(t) for t in ticks]


def test_the_scatter_legend_counts_items_in_whole_numbers_only():
    from engine.report.charts import scatter_chart, scatter_svg

    pairs = [(0.1, 0.2), (0.1, 0.2), (0.5, 0.5), (0.3, 0.9), (0.3, 0.9), (0.3, 0.9)]
    legend = scatter_chart(pairs, "a", "b", "s").to_dict()["layer"][1]["encoding"]["size"]["legend"]
    assert legend["values"] == [1, 2, 3] and legend["format"] == "d"
    texts = _svg_texts(scatter_svg(pairs, "a", "b", "s"))
    assert texts[texts.index("b") + 1:texts.index("items")] == ["1", "2", "3"]


def test_scatter_points_count_positions():
    assert scatter_points([(0.5, 1), (0.5, 1), (1, 0)]) == [{"x": 0.5, "y": 1.0, "n": 2}, {"x": 1.0, "y": 0.0, "n": 1}]


def test_roc_points_by_hand():
    # scores 0.9 (pos), 0.6 (neg), 0.5 (pos), 0.1 (neg)
    points = roc_points([0.9, 0.6, 0.5, 0.1], ["y", "n", "y", "n"], positive=["y"])
    assert points[0] == (0.0, 0.0) and points[-1] == (1.0, 1.0)
    assert (0.0, 0.5) in points and (0.5, 1.0) in points
    assert roc_points([0.2, 0.4], ["y", "y"], positive=["y"]) == []


# --- the commands -------------------------------------------------------------------------------


def test_report_command(store, tmp_path):
    run_id = eval_run(store, 6)
    target = tmp_path / "r.html"
    result = CliRunner().invoke(app, ["report", run_id[:10], "--store", str(store), "-o", str(target)])
    assert result.exit_code == 0, result.output
    assert "report: " in result.output and _blob(target.read_text("utf-8"))["runId"] == run_id
    missing = CliRunner().invoke(app, ["report", "nope", "--store", str(store), "-o", str(target)])
    assert missing.exit_code == 2 and "no run with that id" in missing.output


def test_report_of_an_out_file_creates_no_store(tmp_path, monkeypatch):
    out = tmp_path / "out.jsonl"
    eval_run(tmp_path / "elsewhere.sqlite", 3, out=out)
    store = tmp_path / "none.sqlite"
    result = CliRunner().invoke(app, ["report", str(out), "--store", str(store), "-o", str(tmp_path / "r.html")])
    assert result.exit_code == 0, result.output
    assert not store.exists() and (tmp_path / "r.html").stat().st_size > 0


def test_eval_and_calibrate_write_a_report(tmp_path):
    data = tmp_path / "items.jsonl"
    data.write_text("".join(json.dumps({"id": i, "output": str(v), "label": "good" if v > 0.5 else "bad"}) + "\n"
                            for i, v in enumerate([0.9, 0.2, 0.7, 0.4])))
    store = tmp_path / "s.sqlite"
    runner = CliRunner()
    result = runner.invoke(app, ["eval", NUMERIC, "--data", str(data), "--store", str(store), "--quiet",
                                 "--report", str(tmp_path / "eval.html")])
    assert result.exit_code == 0, result.output
    rows = _blob((tmp_path / "eval.html").read_text("utf-8"))["rows"]
    assert [row["result"]["score"] for row in rows] == [0.9, 0.2, 0.7, 0.4]
    result = runner.invoke(app, ["calibrate", NUMERIC, "--data", str(data), "--positive", "good", "--store",
                                 str(store), "--quiet", "--report", str(tmp_path / "cal.html")])
    assert result.exit_code == 0, result.output
    page = (tmp_path / "cal.html").read_text("utf-8")
    assert "<dt>ROC AUC</dt><dd>1</dd>" in page and 'alt="ROC curve of numeric"' in page


def test_missing_chart_libraries_stop_before_the_run(tmp_path, monkeypatch):
    import engine.report.charts as charts

    def missing():
        raise charts.ReportDependencyError("the HTML report draws its charts with altair and vl-convert (altair is "
                                           "not installed): pip install 'scorespec[report]'")

    monkeypatch.setattr(charts, "chart_libraries", missing)
    data = tmp_path / "items.jsonl"
    data.write_text('{"id": 1, "output": "0.5"}\n')
    store = tmp_path / "s.sqlite"
    result = CliRunner().invoke(app, ["eval", NUMERIC, "--data", str(data), "--store", str(store), "--quiet",
                                      "--report", str(tmp_path / "r.html")])
    assert result.exit_code == 2 and "pip install 'scorespec[report]'" in result.output
    assert not store.exists()  # nothing ran
    result = CliRunner().invoke(app, ["report", "x", "--store", str(store), "-o", str(tmp_path / "r.html")])
    assert result.exit_code == 2 and "scorespec[report]" in result.output


def test_the_header_sums_what_the_results_cost():
    from engine.report.data import usage_totals

    lines = [{"usage": {"calls": 2, "tokensIn": 10, "tokensOut": 5}, "costUsd": 0.25},
             {"usage": {"calls": 1, "cacheHits": 3}}, {"usage": {}, "costUsd": 0.5}]
    total, costs = usage_totals(lines)
    assert (total.calls, total.cache_hits) == (3, 3)
    assert costs == {"cost (USD)": 0.75}
