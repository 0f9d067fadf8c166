"""Reports CI reads: the JUnit XML file (counts per kind, validity, hostile text), the Markdown
summary (its table, checks, worst items, escaping, appending to GitHub's job summary), item
cut-offs by direction, and the compare and calibrate reports."""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from junitparser import Error, Failure, JUnitXml, Skipped
from typer.testing import CliRunner

import engine.cli.eval  # noqa: F401  (registers eval and calibrate)
from engine.cli.main import app
from engine.core.direction import LOWER_IS_BETTER, better, direction_of
from engine.report.ci import CIReport, Gate, ItemOutcome, comparison_report, parse_item_cutoffs
from engine.report.junit import junit_xml, xml_safe
from engine.report.summary_md import md_cell, summary_markdown, worst_items
from engine.run.summary import ScorerSummary, Threshold

NUMERIC = str(Path(__file__).resolve().parent / "specs" / "numeric.yaml")  # score = the output as a number

# a passes, b is below the cut-off 0.5, c is not scorable, d (7, outside [0, 1]) and e (no output) fail
ITEMS = [{"id": "a", "output": "0.9"}, {"id": "b", "output": "0.2"}, {"id": "c", "output": "n/a"},
         {"id": "d", "output": "7"}, {"id": "e"}]


def write_jsonl(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return path


def invoke(*args: str):
    return CliRunner().invoke(app, list(args))


def kinds_of(path: Path) -> dict[str, dict[str, str]]:
    """{suite: {test case name: passed | failure | error | skipped}}, read by junitparser."""
    kinds: dict[str, dict[str, str]] = {}
    for suite in JUnitXml.fromfile(str(path)):
        for case in suite:
            results = case.result
            kind = ("passed" if not results else "error" if isinstance(results[0], Error) else
                    "failure" if isinstance(results[0], Failure) else "skipped" if isinstance(results[0], Skipped)
                    else "?")
            kinds.setdefault(suite.name, {})[case.name] = kind
    return kinds


# --- JUnit ----------------------------------------------------------------------------------------


def test_junit_has_a_case_per_item_and_threshold_with_its_kind(tmp_path):
    data = write_jsonl(tmp_path / "data.jsonl", ITEMS)
    junit = tmp_path / "reports" / "junit.xml"
    result = invoke("eval", NUMERIC, "--data", str(data), "--quiet", "--threshold", "numeric=0.6",
                    "--item-cutoff", "numeric=0.5", "--junit", str(junit))
    assert result.exit_code == 2  # failed items outrank the missed threshold
    assert kinds_of(junit) == {
        "numeric": {"item a": "passed", "item b": "failure", "item c": "skipped", "item d": "error",
                    "item e": "error"},
        "checks": {"threshold numeric": "failure"}}
    xml = JUnitXml.fromfile(str(junit))
    assert (xml.tests, xml.failures, xml.errors, xml.skipped) == (6, 2, 2, 1)
    suites = {s.name: s for s in xml}
    assert (suites["numeric"].tests, suites["numeric"].failures, suites["numeric"].errors,
            suites["numeric"].skipped) == (5, 1, 2, 1)
    cases = {c.name: c for c in suites["numeric"]}
    error = cases["item e"].result[0]
    assert error.type == "input" and "output" in error.message and "kind: input" in error.text
    assert cases["item d"].result[0].type == "formula"
    assert cases["item c"].result[0].message == "not scorable: Not scorable: the output is n/a."
    failure = cases["item b"].result[0]
    assert (failure.type, failure.message) == ("item_cutoff",
                                               "score 0.2 is worse than the cut-off 0.5 (higher is better)")
    assert cases["item a"].classname == "numeric" and cases["item a"].system_out == "score 0.9"
    threshold = next(iter(suites["checks"])).result[0]
    assert threshold.message == "mean 0.55 misses the threshold ≥ 0.6"
    assert "reports: junit " in result.stderr


def test_an_item_below_its_cutoff_exits_1_and_without_cutoffs_the_exit_is_unchanged(tmp_path):
    data = write_jsonl(tmp_path / "data.jsonl", ITEMS[:3])
    assert invoke("eval", NUMERIC, "--data", str(data), "--quiet").exit_code == 0
    result = invoke("eval", NUMERIC, "--data", str(data), "--quiet", "--item-cutoff", "numeric=0.5")
    assert result.exit_code == 1
    assert "1 item(s) worse than their item cut-off (exit 1)" in result.stderr
    as_json = invoke("eval", NUMERIC, "--data", str(data), "--quiet", "--json", "--item-cutoff", "numeric=0.5")
    assert (json.loads(as_json.stdout)["verdict"], json.loads(as_json.stdout)["exitCode"]) == ("below_threshold", 1)
    assert invoke("eval", NUMERIC, "--data", str(data), "--quiet", "--item-cutoff", "numeric=0.2").exit_code == 0


@pytest.mark.parametrize("cutoff, message", [
    ("nope=0.5", "--item-cutoff for 'nope', which is not among the scorers (numeric)"),
    ("numeric=high", "--item-cutoff 'numeric=high': expected ID=VALUE"),
    ("numeric", "--item-cutoff 'numeric': expected ID=VALUE"),
])
def test_a_bad_item_cutoff_is_a_usage_error_before_the_run(tmp_path, cutoff, message):
    data = write_jsonl(tmp_path / "data.jsonl", ITEMS[:1])
    result = invoke("eval", NUMERIC, "--data", str(data), "--quiet", "--item-cutoff", cutoff)
    assert result.exit_code == 2 and message in result.stderr
    assert invoke("runs", "--json").stdout.strip() == "[]"  # nothing ran


HOSTILE = "]]><x a='1'>&amp;\x00\x1b[31m\x07\ud800\ufffe \"quoted\" |`tick`| ok"


def hostile_report() -> CIReport:
    summaries = {"faith]]>": ScorerSummary("faithfulness", scored=1, failed=1, label="faith]]>")}
    outcomes = [
        ItemOutcome(HOSTILE, "faith]]>", "faithfulness", "scored", 0.9, reason=HOSTILE),
        ItemOutcome("2", "faith]]>", "faithfulness", "failed", error_stage="analyze", error_kind="judge",
                    error_message=HOSTILE + "\nsecond line"),
    ]
    return CIReport("eval", "run-1", summaries, outcomes, [Gate("dataset", False, HOSTILE, HOSTILE, error=True)])


def test_hostile_text_is_escaped_and_characters_xml_cannot_hold_are_made_visible(tmp_path):
    data = junit_xml(hostile_report())
    visible = "]]><x a='1'>&amp;\\x00\\x1b[31m\\x07\\ud800\\ufffe \"quoted\" |`tick`| ok"
    assert xml_safe(HOSTILE) == visible
    root = ET.fromstring(data)  # a strict XML 1.0 parser: the document is well formed
    cases = root.findall("./testsuite/testcase")
    assert cases[0].get("name") == f"item {visible}" and cases[0].findtext("system-out") == f"score 0.9: {visible}"
    error = cases[1].find("error")
    assert error.get("message") == f"judge at stage analyze: {visible} second line"
    assert error.text == f"stage: analyze\nkind: judge\nmessage: {visible}\nsecond line"
    assert b"]]>" not in data and b"\x00" not in data and b"\x1b" not in data
    path = tmp_path / "hostile.xml"
    path.write_bytes(data)
    assert kinds_of(path) == {"faith]]>": {f"item {visible}": "passed", "item 2": "error"},
                              "checks": {"dataset": "error"}}


@given(st.text())
def test_any_text_survives_the_junit_file(text):
    outcome = ItemOutcome(text, "s", "s", "scored", 0.5, reason=text)
    root = ET.fromstring(junit_xml(CIReport("eval", None, {}, [outcome])))
    case = root.find("./testsuite/testcase")
    newlines = xml_safe(text).replace("\r\n", "\n").replace("\r", "\n")  # XML reads CR in text as LF
    assert case.get("name") == f"item {xml_safe(text)}"
    assert case.findtext("system-out") == ("score 0.5" + (f": {newlines}" if text else ""))


def test_a_hostile_item_id_through_the_command(tmp_path):
    data = write_jsonl(tmp_path / "data.jsonl", [{"id": "x]]>\u0000\u001b<", "output": "0.5"}])
    junit = tmp_path / "junit.xml"
    assert invoke("eval", NUMERIC, "--data", str(data), "--quiet", "--junit", str(junit)).exit_code == 0
    assert kinds_of(junit) == {"numeric": {"item x]]>\\x00\\x1b<": "passed"}}


# --- Markdown -------------------------------------------------------------------------------------


def cells(row: str) -> list[str]:
    """A Markdown table row's cells, split on pipes that are not escaped."""
    return [c.strip() for c in re.split(r"(?<!\\)\|", row.strip())[1:-1]]


def test_summary_md_has_the_table_checks_and_worst_items(tmp_path):
    data = write_jsonl(tmp_path / "data.jsonl", ITEMS + [{"id": "f|`g`\nh", "output": "0.6"}])
    md = tmp_path / "summary.md"
    result = invoke("eval", NUMERIC, "--data", str(data), "--quiet", "--threshold", "numeric=0.5",
                    "--item-cutoff", "numeric=0.5", "--summary-md", str(md), "--run-id", "run-md")
    assert result.exit_code == 2
    lines = md.read_text(encoding="utf-8").splitlines()
    assert lines[0] == "### scorespec eval: errors ❌"
    table = lines.index("| scorer | scored | not scorable | failed | mean | min | median | max | threshold |")
    assert cells(lines[table + 2]) == ["numeric", "3", "1", "2", "0.5667", "0.2", "0.6", "0.9", "≥ 0.5 ✅ met"]
    assert "- ✅ threshold numeric: mean 0.5667 meets the threshold ≥ 0.5" in lines
    worst = lines.index("| scorer | item | result | reason |")
    rows = [cells(row) for row in lines[worst + 2: worst + 7]]
    assert [row[:3] for row in rows] == [["numeric", "d", "failed (formula)"],
                                         ["numeric", "e", "failed (input)"],
                                         ["numeric", "b", "0.2 ❌ worse than the cut-off 0.5"],
                                         ["numeric", r"f\|\`g\` h", "0.6"],
                                         ["numeric", "a", "0.9"]]
    assert rows[0][3] == r"score.formula 'run.output \| float \* options.scale' gave 7.0, outside \[0, 1\]"
    assert lines[-1] == "run run-md · 6 item(s) · 1 below the item cut-off · " + lines[-1].split(" · ")[-1]


def test_the_markdown_footer_counts_cut_off_misses_only_when_a_cut_off_was_set():
    summaries = {"numeric": ScorerSummary("numeric", scored=2, label="numeric")}

    def footer(cutoff):
        outcomes = [ItemOutcome("a", "numeric", "numeric", "scored", 0.2, cutoff=cutoff),
                    ItemOutcome("b", "numeric", "numeric", "scored", 0.9, cutoff=cutoff)]
        return summary_markdown(CIReport("compare", "run-1", summaries, outcomes, seconds=1.0)).splitlines()[-1]

    assert footer(None) == "run run-1 · 2 item(s) · 1.0 s"
    assert footer(0.5) == "run run-1 · 2 item(s) · 1 below the item cut-off · 1.0 s"


def test_md_cell_keeps_user_text_inside_its_cell():
    assert md_cell("a\nb | `c` *d* _e_ [f](g) <img src=x> & \\ ~h~ \x00\x1b") == (
        r"a b \| \`c\` \*d\* \_e\_ \[f\](g) \<img src=x\> &amp; \\ \~h\~")
    assert md_cell("x" * 400) == "x" * 299 + "…"


@given(st.text())
def test_any_text_stays_in_one_table_cell_with_no_code_span_or_tag(text):
    cell = md_cell(text)
    # a GFM table row splits at pipes that are not backslash-escaped; a backslash escapes any punctuation
    row = f"| {cell} |"
    tokens = re.findall(r"\\.|[^\\]", row, re.S)
    assert "".join(tokens) == row  # no lone backslash left to escape the closing pipe
    assert [t for t in tokens if t == "|"] == ["|", "|"]
    assert not {"`", "<", "\n", "\r"} & set(tokens)


def test_summary_md_appends_to_the_github_step_summary_and_replaces_other_files(tmp_path, monkeypatch):
    data = write_jsonl(tmp_path / "data.jsonl", ITEMS[:2])
    step = tmp_path / "step_summary.md"
    step.write_text("earlier step\n", encoding="utf-8")
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(step))
    other = tmp_path / "summary.md"
    for _ in range(2):
        for target in (step, other):
            assert invoke("eval", NUMERIC, "--data", str(data), "--quiet", "--summary-md", str(target)).exit_code == 0
    text = step.read_text(encoding="utf-8")
    assert text.startswith("earlier step\n### scorespec eval: passed ✅") and text.count("### scorespec eval") == 2
    assert other.read_text(encoding="utf-8").count("### scorespec eval") == 1


# --- direction, compare and calibrate ---------------------------------------------------------------


def test_cutoffs_and_worst_items_follow_the_direction():
    assert better(0.9, 0.5) and not better(0.5, 0.5) and better(0.1, 0.5, LOWER_IS_BETTER)
    with pytest.raises(ValueError, match="direction 'up'"):
        better(1, 0, "up")
    assert direction_of(object()) == "higher_is_better"
    lower = [ItemOutcome(i, "err", "err", "scored", s, cutoff=0.5, direction=LOWER_IS_BETTER)
             for i, s in (("x", 0.7), ("y", 0.3), ("z", 0.5))]
    assert [o.kind for o in lower] == ["failure", "passed", "passed"]
    report = CIReport("eval", None, {}, lower)
    assert [o.item_id for o in worst_items(report, top=2)] == ["x", "z"]
    assert parse_item_cutoffs({"err": 0.5}) == {"err": 0.5}


def test_compare_reports_its_verdict_first_and_as_a_check():
    summaries = {"faithfulness@a": ScorerSummary("faithfulness", scored=2, mean=0.8, label="faithfulness@a"),
                 "faithfulness@b": ScorerSummary("faithfulness", scored=2, mean=0.6, label="faithfulness@b",
                                                 threshold=Threshold(0.7), threshold_met=False)}
    lines = [{"id": i, "scorer": "faithfulness", "label": label, "score": score}
             for label, scores in (("faithfulness@a", (0.8, 0.8)), ("faithfulness@b", (0.4, 0.8)))
             for i, score in enumerate(scores, 1)]
    headline = "faithfulness@b is worse than faithfulness@a: −0.2 (95% CI −0.4..0, p 0.04, 2 pairs)"
    report = comparison_report(headline, False, summaries, lines, cutoffs={"faithfulness": 0.5})
    md = summary_markdown(report).splitlines()
    assert md[:3] == ["### scorespec compare: below threshold ❌", "", f"**{md_cell(headline)}**"]
    root = ET.fromstring(junit_xml(report))
    checks = {c.get("name"): c for c in root.findall("./testsuite[@name='checks']/testcase")}
    assert checks["compare"].find("failure").get("message") == headline
    assert checks["threshold faithfulness@b"].find("failure") is not None
    assert [s.get("name") for s in root.findall("testsuite")] == ["faithfulness@a", "faithfulness@b", "checks"]
    assert root.get("failures") == "3" and report.exit_code == 1  # item 1 of b (0.4 < 0.5), compare, threshold


def test_calibrate_writes_both_reports(tmp_path):
    rows = [{"id": "p", "output": "0.9", "label": 1}, {"id": "q", "output": "0.1", "label": 0},
            {"id": "r", "output": "0.6", "label": 0.625}, {"id": "s", "output": "n/a", "label": 1}]
    data = write_jsonl(tmp_path / "labelled.jsonl", rows)
    junit, md = tmp_path / "cal.xml", tmp_path / "cal.md"
    result = invoke("calibrate", NUMERIC, "--data", str(data), "--quiet", "--junit", str(junit),
                    "--summary-md", str(md))
    assert result.exit_code == 0, result.stderr
    assert kinds_of(junit) == {"numeric": {"item p": "passed", "item q": "passed", "item r": "passed",
                                           "item s": "skipped"}}
    lines = md.read_text(encoding="utf-8").splitlines()
    assert lines[:3] == ["### scorespec calibrate: passed ✅", "",
                         "**calibration of numeric: Spearman 1 · Pearson 1 · 3 item(s) used**"]
    assert cells(lines[lines.index("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |") + 1]) == [
        "numeric", "3", "1", "0", "0.5333", "0.1", "0.6", "0.9", ""]


# --- the CI guide's recipes ------------------------------------------------------------------------


def test_the_ci_guide_recipes_are_yaml_and_use_only_flags_eval_knows():
    import shlex

    import typer.main
    import yaml

    guide = (Path(__file__).resolve().parent.parent / "docs" / "guides" / "ci.md").read_text(encoding="utf-8")
    recipes = [yaml.safe_load(block.split("```", 1)[0]) for block in guide.split("```yaml\n")[1:]]
    github = [r["jobs"]["eval"] for r in recipes if isinstance(r, dict) and "jobs" in r]
    gitlab = [r["eval"] for r in recipes if isinstance(r, dict) and "eval" in r]
    assert len(github) == 1 and len(gitlab) == 1
    github, gitlab = github[0], gitlab[0]
    commands = [step["run"] for step in github["steps"] if "run" in step] + gitlab["script"]
    evals = [shlex.split(c) for c in commands if c.startswith("scorespec eval")]
    assert len(evals) == 2
    known = {opt for p in typer.main.get_command(app).commands["eval"].params for opt in p.opts}
    for args in evals:
        flags = {a for a in args if a.startswith("--")}
        assert flags <= known, flags - known
        assert {"--junit", "--summary-md", "--threshold"} <= flags
    cached = next(step for step in github["steps"] if step.get("uses", "").startswith("actions/cache"))
    assert "hashFiles('scorer_specs/**'" in cached["with"]["key"]
    assert any(step.get("env", {}).get("SCORESPEC_CACHE_DB") for step in github["steps"])
    assert gitlab["variables"]["SCORESPEC_CACHE_DB"] and gitlab["artifacts"]["reports"]["junit"] == "junit.xml"
