"""Comparing versions of a scorer (``scorespec compare``, ``engine.compare``), directions, two
versions in one run under labels, and the spec text each run keeps.

Judges are scripted: `FakeJudge` in-process, the fake OpenAI server for the command line. The
claims prompt of the small verdict spec holds the item's output; these judges take its words as
the claims and each claim word as its verdict, so an output ``"yes no"`` scores 1 of 2.
"""

from __future__ import annotations

import json
import math
from decimal import Decimal

import pytest
from conftest import SPEC_FIXTURES
from typer.testing import CliRunner

import engine.cli.compare  # noqa: F401  (registers compare)
import engine.cli.eval  # noqa: F401  (registers eval, show)
from engine import compare, load_scorer, run_evals
from engine.analysis.compare_stats import mcnemar, paired_difference
from engine.analysis.comparison import Outcome, Version, build_comparison
from engine.cli.main import app
from engine.run.store import Store
from engine.run.summary import Threshold
from engine.testing import FakeJudge

NUMERIC = SPEC_FIXTURES / "numeric.yaml"  # rule-only: the score is the output read as a number
ENV = {"COLUMNS": "250", "SCORESPEC_MODEL": None, "OPENAI_API_KEY": "test", "OPENAI_BASE_URL": None}


def invoke(*args: str):
    return CliRunner().invoke(app, [str(a) for a in args], env=ENV)


def _words_after(text: str, head: str) -> list[str]:
    return text.split(head, 1)[1].split(">>>", 1)[0].split()


def claims_reply(text: str) -> dict:
    """The output's words are its claims; a word starting with # only tells items apart."""
    return {"claims": [w for w in _words_after(text, "<<<\n") if not w.startswith("#")]}


def verdicts_reply(text: str) -> dict:
    claims = [line.split(". ", 1)[1] for line in text.split("Judge:\n", 1)[1].splitlines() if ". " in line]
    return {"verdicts": [{"verdict": claim} for claim in claims]}


def prompt(call) -> str:
    """The stage's prompt: its first user message (a re-ask adds more)."""
    return next(m["content"] for m in call.messages if m["role"] == "user")


def word_judge() -> FakeJudge:
    """Claims are the output's words; each claim's verdict is the claim itself."""
    return FakeJudge({"preprocess": lambda call: claims_reply(prompt(call)),
                      "analyze": lambda call: verdicts_reply(prompt(call))})


def server_reply(request: dict) -> dict:
    """The same judge behind the fake OpenAI server."""
    text = "\n".join(m.get("content") or "" for m in request["messages"] if m["role"] == "user")
    return verdicts_reply(text) if "Judge:\n" in text else claims_reply(text)


@pytest.fixture
def half_spec(verdict_spec, write_spec):
    """(the verdict spec, a child of it whose formula is multiplied by 0.5)."""
    parent = verdict_spec()
    child = write_spec("half", """
        format: 1
        id: half
        extends: verdicts
        score:
          formula: "supported / (preprocess | length) * options.scale * 0.5"
        """)
    return parent, child


def twenty_items() -> list[dict]:
    return [{"id": i, "output": "yes yes" if i % 2 else "yes no"} for i in range(20)]


def write_jsonl(path, rows) -> str:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return str(path)


# --- the child that halves the score ----------------------------------------------------------


def test_a_child_that_halves_the_formula_loses_everywhere(half_spec):
    parent, child = half_spec
    judge = word_judge()
    result = compare([load_scorer(str(parent), judge=judge), load_scorer(str(child), judge=judge)], twenty_items(),
                     store=False)
    base, half = result.versions["verdicts"], result.versions["half"]
    assert base.mean == 0.75 and half.mean == 0.375  # 10 items at 1, 10 at 0.5; halved
    (c,) = result.comparisons
    assert c.label == "half" and result.baseline == "verdicts"
    assert c.paired.n == 20
    assert c.paired.mean_difference == -0.5 * base.mean == -0.375
    assert (c.paired.wins, c.paired.ties, c.paired.losses) == (0, 0, 20)
    assert c.paired.p_value is not None and c.paired.p_value < 0.05
    assert c.paired.ci95 is not None and c.paired.ci95[1] < 0  # the interval excludes zero
    assert c.paired.verdict == "worse" and c.worse_by_more_than(0.1) and not c.worse_by_more_than(0.4)
    assert c.words.startswith("half scores lower than verdicts on 20 of 20 items; mean difference -0.375")
    assert "unlikely to be chance, p < 0.001" in c.words
    assert result.exit_code(0.1) == 1 and result.exit_code(0.4) == 0 and result.exit_code() == 0
    assert result.headline == f"half scores lower than verdicts: -0.375 (95% CI {c.paired.ci95[0]:g}..{c.paired.ci95[1]:g}, " \
                              "p < 0.001, 20 pairs)"
    assert {label: (s.scored, s.mean, s.min, s.max, s.direction) for label, s in result.summaries().items()} == {
        "verdicts": (20, 0.75, 0.5, 1.0, "higher_is_better"), "half": (20, 0.375, 0.25, 0.5, "higher_is_better")}
    # the movers: the largest moves first (1 → 0.5), with both reasons; only the formula changed
    assert [(m.id, m.baseline_score, m.score) for m in c.movers[:2]] == [(1, 1.0, 0.5), (3, 1.0, 0.5)]
    assert c.movers[0].baseline_reason == "2 of 2 claims supported" and c.movers[0].first_differing_stage is None


def test_compare_command_fails_if_worse_through_the_fake_server(half_spec, fake_server, tmp_path):
    parent, child = half_spec
    fake_server.reply = server_reply
    data = write_jsonl(tmp_path / "items.jsonl", twenty_items())
    common = ["--data", data, "--model", "openai/x", "--base-url", fake_server.base_url, "--quiet"]
    result = invoke("compare", parent, f"half@draft={child}", *common, "--fail-if-worse", "0.1", "--json")
    assert result.exit_code == 1, result.output
    out = json.loads(result.stdout)
    assert out["baseline"] == "verdicts" and list(out["versions"]) == ["verdicts", "half@draft"]
    assert out["versions"]["verdicts"]["counts"] == {"scored": 20, "notScorable": 0, "failed": 0}
    assert (out["versions"]["verdicts"]["mean"], out["versions"]["half@draft"]["mean"]) == (0.75, 0.375)
    (c,) = out["comparisons"]
    paired = c["paired"]
    assert c["label"] == "half@draft"
    assert {k: paired[k] for k in ("n", "meanDifference", "wins", "ties", "losses", "test")} == {
        "n": 20, "meanDifference": -0.375, "wins": 0, "ties": 0, "losses": 20, "test": "wilcoxon"}
    assert paired["pValue"] < 0.05 and paired["ci95"][1] < 0
    assert c["statusChanges"] == [] and len(c["movers"]) == 5 and c["labels"] is None
    assert "worse than verdicts by more than 0.1: half@draft (exit 1)" in result.stderr
    assert fake_server.requests and {r["model"] for r in fake_server.requests} == {"x"}
    # a looser gate passes
    again = invoke("compare", parent, f"half@draft={child}", *common, "--fail-if-worse", "0.5")
    assert again.exit_code == 0, again.output
    assert "half@draft scores lower than verdicts on 20 of 20 items" in again.stdout
    # without labels it says the scores differ, not that a version agrees better with people
    assert "no human labels: this says the scores differ, not which version agrees better" in again.stdout


def test_the_bootstrap_interval_is_seeded(half_spec):
    rng_rows = [{"id": i, "output": " ".join(["yes"] * (i % 3 + 1) + ["no"] * (i % 4))} for i in range(30)]
    parent, child = half_spec
    judge = word_judge()
    versions = [load_scorer(str(parent), judge=judge), load_scorer(str(child), judge=judge)]
    first = compare(versions, rng_rows, store=False, seed=7).comparisons[0].paired.ci95
    again = compare(versions, rng_rows, store=False, seed=7).comparisons[0].paired.ci95
    assert first == again and first[0] < first[1] < 0


def test_a_resumed_comparison_counts_the_earlier_results(half_spec, tmp_path):
    parent, child = half_spec
    judge = word_judge()
    versions = [load_scorer(str(parent), judge=judge), load_scorer(str(child), judge=judge)]
    out = tmp_path / "compare.jsonl"
    first = compare(versions, twenty_items()[:12], out=out)
    calls = len(judge.calls)
    again = compare(versions, twenty_items(), out=out, resume=True)  # 8 more items
    assert len(judge.calls) - calls == 8 * 2 * 2  # only the new items were asked about
    assert again.run_ids == first.run_ids and again.comparisons[0].paired.n == 20
    assert again.comparisons[0].paired.mean_difference == -0.375 and first.comparisons[0].paired.n == 12
    assert [m.id for m in again.comparisons[0].movers] == [1, 3, 5, 7, 9]  # in the data's order


# --- identical versions, a third version, direction --------------------------------------------


def test_identical_versions_tie_everywhere(verdict_spec):
    spec = str(verdict_spec())
    judge = word_judge()
    result = compare([load_scorer(spec, judge=judge), load_scorer(spec, judge=judge, label="again")], twenty_items(),
                     store=False)
    (c,) = result.comparisons
    assert c.paired.mean_difference == 0 and c.paired.ci95 == (0.0, 0.0)
    assert (c.paired.wins, c.paired.ties, c.paired.losses) == (0, 20, 0)
    assert c.paired.p_value is None and c.paired.statistic is None  # not computable, never NaN
    assert c.paired.notes == ["every one of the 20 pairs ties: the signed-rank test is not computable"]
    assert c.words == ("again scores the same as verdicts on all 20 items; mean difference +0 (95% CI +0 to +0); "
                       "every one of the 20 pairs ties: the signed-rank test is not computable")
    assert c.movers == [] and c.paired.verdict == "unclear"
    assert "NaN" not in json.dumps(result.to_json_dict())


def test_a_third_version_is_compared_with_the_baseline(half_spec, write_spec):
    parent, child = half_spec
    write_spec("plus", """
        format: 1
        id: plus
        extends: verdicts
        score:
          formula: "min(1, supported / (preprocess | length) + 0.25)"
        """)
    judge = word_judge()
    result = compare([load_scorer(str(parent), judge=judge), load_scorer(str(child), judge=judge),
                      load_scorer(str(parent.parent / "plus.yaml"), judge=judge)], twenty_items(), store=False)
    assert list(result.versions) == ["verdicts", "half", "plus"]
    assert [c.label for c in result.comparisons] == ["half", "plus"]
    plus = result.comparisons[1]
    # 0.5 → 0.75 on the ten "yes no" items; 1 stays 1 on the others
    assert (plus.paired.wins, plus.paired.ties, plus.paired.losses) == (10, 10, 0)
    assert plus.paired.mean_difference == 0.125 and result.versions["plus"].mean == 0.875
    assert plus.paired.verdict == "better" and result.exit_code(0.1) == 1  # half is still worse


def test_lower_is_better_counts_falling_scores_as_wins(write_spec, tmp_path):
    base = write_spec("risk", NUMERIC.read_text(encoding="utf-8").replace("id: numeric", "id: risk\n"
                                                                          "direction: lower_is_better"))
    lower = write_spec("risk_v2", """
        format: 1
        id: risk_v2
        extends: risk
        score:
          formula: "run.output | float * options.scale * 0.5"
        """)
    rows = [{"id": i, "output": str(v)} for i, v in enumerate([0.2, 0.4, 0.6, 0.8, 1.0, 0.0])]
    result = compare([str(base), str(lower)], rows, store=False)
    assert result.direction == "lower_is_better"
    (c,) = result.comparisons
    assert (c.paired.wins, c.paired.ties, c.paired.losses) == (5, 1, 0)  # 0 halves to 0: a tie
    assert c.paired.mean_difference == -0.25 and c.paired.verdict == "better" and c.paired.worse_by == -0.25
    assert c.words.startswith("risk_v2 scores lower than risk on 5 of 6 items, the same on 1")
    assert not c.worse_by_more_than(0) and result.exit_code(0) == 0
    # the other way round, the higher scores are worse for a lower-is-better scorer
    back = compare([str(lower), str(base)], rows, store=False).comparisons[0]
    assert (back.paired.wins, back.paired.losses) == (0, 5) and back.worse_by_more_than(0.2)


def test_versions_that_disagree_on_direction_are_refused(write_spec):
    base = write_spec("risk", NUMERIC.read_text(encoding="utf-8").replace("id: numeric", "id: risk\n"
                                                                          "direction: lower_is_better"))
    with pytest.raises(ValueError, match="disagree on direction"):
        compare([str(NUMERIC), str(base)], [{"id": 1, "output": "0.5"}], store=False)


# --- status changes (C29) ------------------------------------------------------------------------


def test_a_status_change_is_listed_apart_and_left_out_of_the_means(verdict_spec):
    spec = str(verdict_spec())

    def failing_on_three_claims(call):
        found = verdicts_reply(prompt(call))
        if len(found["verdicts"]) == 3:
            return {"verdicts": []}  # never one verdict per claim: the check fails, the item fails
        return found

    broken = FakeJudge({"preprocess": lambda call: claims_reply(prompt(call)),
                        "analyze": failing_on_three_claims})
    rows = [{"id": i, "output": "yes no no" if i == 7 else ("yes yes" if i % 2 else "yes no")} for i in range(10)]
    result = compare([load_scorer(spec, judge=word_judge()), load_scorer(spec, judge=broken, label="b")], rows,
                     store=False)
    (c,) = result.comparisons
    assert len(c.status_changes) == 1
    change = c.status_changes[0]
    assert (change.id, change.baseline_status, change.status, change.baseline_score) == (7, "scored", "failed", 0.33)
    assert change.score is None and change.detail.startswith("check at analyze: ")
    assert c.paired.n == 9 and result.common == 9
    # the means are over the nine items both scored: 4 at 1 (ids 1, 3, 5, 9) and 5 at 0.5
    assert result.versions["verdicts"].mean == result.versions["b"].mean == float(Decimal("6.5") / 9)
    assert result.versions["verdicts"].scored == 10 and result.versions["b"].failed == 1
    assert c.paired.mean_difference == 0 and c.paired.ties == 9
    assert result.exit_code() == 2  # a failed result is an error: resume to retry it


def test_status_changes_through_the_command_line(tmp_path):
    rows = [{"id": i, "output": str(i / 10)} for i in range(10)]
    rows_b = [dict(r) for r in rows]
    data = write_jsonl(tmp_path / "items.jsonl", [{**r, "ground_truth": "n/a" if r["id"] == 3 else r["output"]}
                                                  for r in rows_b])
    (tmp_path / "scorer_specs").mkdir()
    (tmp_path / "scorer_specs" / "gt.yaml").write_text(NUMERIC.read_text(encoding="utf-8").replace(
        "id: numeric", "id: gt").replace("run.output | trim == 'n/a'", "run.ground_truth | trim == 'n/a'"),
        encoding="utf-8")
    result = invoke("compare", NUMERIC, tmp_path / "scorer_specs" / "gt.yaml", "--data", data, "--quiet", "--json")
    assert result.exit_code == 0, result.output
    (c,) = json.loads(result.stdout)["comparisons"]
    assert c["statusChanges"] == [{"id": 3, "baselineStatus": "scored", "status": "not_scorable",
                                   "baselineScore": 0.3, "score": None, "baselineDetail": None,
                                   "detail": "Not scorable: the output is n/a."}]
    assert c["paired"]["n"] == 9 and c["paired"]["ties"] == 9
    assert "3: scored 0.3 → not scorable — Not scorable: the output is n/a." in result.stderr


def test_without_a_terminal_compare_prints_a_progress_line_every_tenth_of_the_items(tmp_path):
    rows = [{"id": i, "output": str(i / 20)} for i in range(20)]
    data = write_jsonl(tmp_path / "items.jsonl", rows)
    result = invoke("compare", NUMERIC, f"again={NUMERIC}", "--data", data, "--concurrency", "1")  # no terminal
    assert result.exit_code == 0, result.output
    lines = [line for line in result.stderr.splitlines() if "item(s) done" in line]
    assert lines == [f"{n}/20 item(s) done · numeric {mean} · again {mean}" for n, mean in
                     ((2, "0.025"), (4, "0.075"), (6, "0.125"), (8, "0.175"), (10, "0.225"), (12, "0.275"),
                      (14, "0.325"), (16, "0.375"), (18, "0.425"), (20, "0.475"))]
    assert "━" not in result.stderr  # no progress bar drawn into a log
    assert [line for line in invoke("compare", NUMERIC, f"again={NUMERIC}", "--data", data, "--quiet").stderr
            .splitlines() if "item(s) done" in line] == []


# --- human labels ------------------------------------------------------------------------------


def labelled_specs(write_spec):
    """numeric scores the output; its child `by_truth` scores the ground truth instead."""
    write_spec("by_truth", f"""
        format: 1
        id: by_truth
        extends: {NUMERIC}
        score:
          formula: "run.ground_truth | float * options.scale"
        """)


def test_label_figures_side_by_side_against_hand_computed_values(write_spec, tmp_path):
    labelled_specs(write_spec)
    a = [0.9, 0.8, 0.3, 0.6, 0.2, 0.7, 0.1, 0.4]
    b = [0.9, 0.8, 0.7, 0.6, 0.2, 0.3, 0.1, 0.4]
    labels = ["pos"] * 4 + ["neg"] * 4
    rows = [{"id": f"i{n}", "output": str(x), "ground_truth": str(y), "verdict": {"human": lab}}
            for n, (x, y, lab) in enumerate(zip(a, b, labels))]
    rows.append({"id": "unlabelled", "output": "0.5", "ground_truth": "0.5"})
    result = compare([str(NUMERIC), str(tmp_path / "scorer_specs" / "by_truth.yaml")], rows, store=False,
                     label_field="verdict.human", positive=["pos"], cutoff=0.5)
    lab = result.comparisons[0].labels
    assert (lab.kind, lab.n, lab.cutoff, lab.left_out) == ("binary", 8, 0.5, 1)
    # A at ≥ 0.5: tp 3 (0.9, 0.8, 0.6), fn 1 (0.3), tn 3, fp 1 (0.7): balanced accuracy (3/4 + 3/4) / 2
    assert lab.baseline.balanced_accuracy == 0.75 and lab.baseline.confusion == {"tp": 3, "fp": 1, "tn": 3, "fn": 1}
    # ROC AUC: positive-over-negative pairs 4 + 4 + 2 + 3 = 13 of 16
    assert lab.baseline.roc_auc == 13 / 16
    assert lab.version.balanced_accuracy == 1.0 and lab.version.roc_auc == 1.0
    # McNemar: 0 items only A decides right, 2 only B (0.3 → 0.7 positive, 0.7 → 0.3 negative): p = 2 × 0.5²
    test = lab.mcnemar
    assert (test.baseline_only, test.version_only, test.both_right, test.both_wrong) == (0, 2, 6, 0)
    assert test.p_value == 0.5
    paired = result.comparisons[0].paired
    assert (paired.wins, paired.ties, paired.losses, paired.n) == (1, 7, 1, 9)


def test_graded_labels_give_spearman_side_by_side(write_spec, tmp_path):
    labelled_specs(write_spec)
    rows = [{"id": n, "output": str(x), "ground_truth": str(y), "stars": n + 1}
            for n, (x, y) in enumerate(zip([0.1, 0.2, 0.4, 0.3], [0.1, 0.2, 0.3, 0.4]))]
    lab = compare([str(NUMERIC), str(tmp_path / "scorer_specs" / "by_truth.yaml")], rows, store=False,
                  label_field="stars").comparisons[0].labels
    # ranks 1 2 4 3 against 1 2 3 4: 1 − 6 × (0 + 0 + 1 + 1) / (4 × 15) = 0.8
    assert lab.kind == "graded" and lab.mcnemar is None and lab.cutoff is None
    assert lab.baseline.spearman == pytest.approx(0.8, abs=1e-12) and lab.version.spearman == pytest.approx(1.0)


def test_labels_on_the_command_line(write_spec, tmp_path):
    labelled_specs(write_spec)
    rows = [{"id": n, "output": str(x), "ground_truth": str(y), "label": lab}
            for n, (x, y, lab) in enumerate(zip([0.9, 0.3, 0.2, 0.7], [0.9, 0.7, 0.2, 0.3], ["ok", "ok", "bad", "bad"]))]
    data = write_jsonl(tmp_path / "items.jsonl", rows)
    result = invoke("compare", NUMERIC, tmp_path / "scorer_specs" / "by_truth.yaml", "--data", data, "--positive",
                    "ok", "--quiet")
    assert result.exit_code == 0, result.output
    assert "human labels (binary) on 4 item(s) both scored, decision: score ≥ 0.5" in result.stdout
    assert "McNemar (exact): 0 item(s) only numeric decided right, 2 only by_truth · p = 0.5" in result.stdout


def test_the_html_report_shows_the_label_agreement_the_terminal_shows(write_spec, tmp_path):
    labelled_specs(write_spec)
    rows = [{"id": n, "output": str(x), "ground_truth": str(y), "label": lab}
            for n, (x, y, lab) in enumerate(zip([0.9, 0.3, 0.2, 0.7], [0.9, 0.7, 0.2, 0.3], ["ok", "ok", "bad", "bad"]))]
    data = write_jsonl(tmp_path / "items.jsonl", rows)
    page = tmp_path / "compare.html"
    result = invoke("compare", NUMERIC, tmp_path / "scorer_specs" / "by_truth.yaml", "--data", data, "--positive",
                    "ok", "--quiet", "--store", tmp_path / "store.sqlite", "--report", page)
    assert result.exit_code == 0, result.output
    html = page.read_text(encoding="utf-8")
    section = html[html.index("Agreement with the human labels"):]
    assert "human labels (binary) on 4 item(s) both scored, decision: score ≥ 0.5" in section
    # balanced accuracy at 0.5: numeric decides 2 of 4 right (0.5), by_truth all 4 (1)
    assert "<td>balanced accuracy</td><td class=\"num\">0.5</td><td class=\"num\">1</td>" in section
    assert "McNemar (exact): 0 item(s) only numeric decided right, 2 only by_truth · p = 0.5" in section


# --- statistics alone ----------------------------------------------------------------------------


def test_paired_statistics_are_never_nan():
    empty = paired_difference([], [])
    assert (empty.n, empty.mean_difference, empty.ci95, empty.p_value) == (0, None, None, None)
    assert empty.notes == ["no item was scored by both versions: no difference to measure"]
    one = paired_difference([0.2], [0.5])
    assert one.mean_difference == 0.3 and one.ci95 is None and one.wins == 1
    assert one.notes == ["too few pairs (1): the signed-rank test needs at least 2", "one pair: no confidence interval"]
    assert one.p_value is None and one.statistic is None
    assert paired_difference([0.2, 0.4], [0.5, 0.4]).p_value == 1.0  # two pairs, one differs: computed
    for found in (empty, one):
        assert not any(isinstance(v, float) and math.isnan(v) for v in found.to_json_dict().values())


@pytest.mark.parametrize("baseline, version, ending", [
    ([0.2, 0.4, 0.6, 0.8], [0.3, 0.3, 0.7, 0.7], "; a difference this large could well be chance, p = 1"),
    ([0.0] * 20, [0.5] * 20, "; a difference this large is unlikely to be chance, p < 0.001"),
])
def test_the_paired_difference_reads_as_a_sentence(baseline, version, ending):
    from engine.analysis.comparison import _words

    paired = paired_difference(baseline, version)
    text = _words("A", "B", paired)
    assert text.endswith(ending), text
    assert " is could " not in text


def test_the_mean_difference_is_exact_on_decimal_forms():
    found = paired_difference([0.1, 0.2, 0.7], [0.2, 0.4, 0.9])
    assert found.mean_difference == float(Decimal("0.5") / 3)
    assert (found.baseline_mean, found.mean) == (float(Decimal("1.0") / 3), 0.5)
    assert paired_difference([0.7, 0.9], [0.9, 0.7]).mean_difference == 0.0


def test_mcnemar_without_discordant_pairs_is_not_computable():
    found = mcnemar([True, False, True], [True, False, True])
    assert found.p_value is None and "not computable" in found.note
    assert mcnemar([True] * 6, [False] + [True] * 5).p_value == 1.0  # one discordant pair: 2 × 0.5


def test_build_comparison_refuses_a_single_version():
    with pytest.raises(ValueError, match="at least two versions"):
        build_comparison([Version("a", "a")], {"a": {"1": Outcome(1, "scored", 0.5)}})


def test_the_first_differing_stage_is_named(verdict_spec):
    spec = str(verdict_spec())
    stricter = FakeJudge({"preprocess": lambda call: claims_reply(prompt(call)),
                          "analyze": lambda call: {"verdicts": [{"verdict": "no"} for _ in
                                                                verdicts_reply(prompt(call))["verdicts"]]}})
    result = compare([load_scorer(spec, judge=word_judge()), load_scorer(spec, judge=stricter, label="strict")],
                     [{"id": "a", "output": "yes yes"}, {"id": "b", "output": "no no"}], store=False)
    (mover,) = result.comparisons[0].movers
    assert (mover.id, mover.baseline_score, mover.score, mover.first_differing_stage) == ("a", 1.0, 0.0, "analyze")
    assert (mover.baseline_reason, mover.reason) == ("2 of 2 claims supported", "0 of 2 claims supported")


# --- finished runs -------------------------------------------------------------------------------


def test_compare_finished_runs_from_the_store(half_spec, tmp_path):
    parent, child = half_spec
    judge = word_judge()
    db = Store(tmp_path / "store.sqlite")
    first = run_evals(twenty_items(), [load_scorer(str(parent), judge=judge)], store=db)
    second = run_evals(twenty_items(), [load_scorer(str(child), judge=judge)], store=db)
    db.close()
    result = invoke("compare", "--runs", first.run_id, second.run_id, "--store", tmp_path / "store.sqlite",
                    "--json", "--fail-if-worse", "0.1")
    assert result.exit_code == 1, result.output
    out = json.loads(result.stdout)
    assert out["runIds"] == [first.run_id, second.run_id] and out["baseline"] == "verdicts"
    assert out["comparisons"][0]["paired"]["meanDifference"] == -0.375
    # one run holding both versions under two labels; RUN/LABEL picks one, in the order given
    both = run_evals(twenty_items(), [load_scorer(str(child), judge=judge, label="half@draft"),
                                      load_scorer(str(parent), judge=judge)], store=tmp_path / "store.sqlite")
    picked = invoke("compare", "--runs", f"{both.run_id}/verdicts", f"{both.run_id}/half@draft", "--store",
                    tmp_path / "store.sqlite", "--json")
    assert picked.exit_code == 0, picked.output
    out = json.loads(picked.stdout)
    assert list(out["versions"]) == ["verdicts", "half@draft"] and out["runIds"] == [both.run_id]
    assert out["comparisons"][0]["paired"]["losses"] == 20
    whole = json.loads(invoke("compare", "--runs", both.run_id, "--store", tmp_path / "store.sqlite",
                              "--json").stdout)
    assert list(whole["versions"]) == ["half@draft", "verdicts"]  # every label of the run, in its order
    # the same label in two runs is named by its run too
    named = json.loads(invoke("compare", "--runs", first.run_id, f"{both.run_id}/verdicts", "--store",
                              tmp_path / "store.sqlite", "--json").stdout)
    assert list(named["versions"]) == [f"verdicts@{first.run_id}", f"verdicts@{both.run_id}"]
    twice = invoke("compare", "--runs", first.run_id, first.run_id, "--store", tmp_path / "store.sqlite")
    assert twice.exit_code == 2 and "is given twice" in twice.stderr
    unknown = invoke("compare", "--runs", f"{first.run_id}/nope", second.run_id, "--store", tmp_path / "store.sqlite")
    assert unknown.exit_code == 2 and "has no scorer labelled 'nope' (its labels: verdicts)" in unknown.stderr


def test_compare_of_finished_runs_shows_the_judge_usage_the_runs_stored(half_spec, tmp_path):
    parent, child = half_spec
    judge = word_judge()
    judge.tokens = (100, 10)  # every request: 100 tokens in, 10 out; 2 requests an item
    with Store(tmp_path / "store.sqlite") as db:
        first = run_evals(twenty_items(), [load_scorer(str(parent), judge=judge)], store=db)
        second = run_evals(twenty_items(), [load_scorer(str(child), judge=judge)], store=db)
    runs = ["--runs", first.run_id, second.run_id, "--store", tmp_path / "store.sqlite"]
    out = json.loads(invoke("compare", *runs, "--json").stdout)
    assert {label: (v["tokensIn"], v["tokensOut"], v["judgeCalls"], v["cacheHits"], v["costUsd"])
            for label, v in out["versions"].items()} == {"verdicts": (4000, 400, 40, 0, None),
                                                          "half": (4000, 400, 40, 0, None)}
    table = invoke("compare", *runs).stdout.splitlines()
    rows = [line for line in table if line.split()[:2] in (["verdicts", "verdicts"], ["half", "half"])]
    assert len(rows) == 2 and all(row.endswith("4,000 tokens in · 400 out") for row in rows), table


def test_a_fully_cached_version_says_all_its_answers_came_from_the_cache(half_spec, fake_server, tmp_path):
    parent, child = half_spec
    fake_server.reply = server_reply
    data = write_jsonl(tmp_path / "items.jsonl", twenty_items())
    common = ["--data", data, "--model", "openai/x", "--base-url", fake_server.base_url, "--quiet"]
    assert invoke("compare", parent, f"half@draft={child}", *common).exit_code == 0
    asked = len(fake_server.requests)
    again = invoke("compare", parent, f"half@draft={child}", *common, "--json")
    assert again.exit_code == 0, again.output
    assert len(fake_server.requests) == asked  # every answer from the cache
    out = json.loads(again.stdout)
    assert {label: (v["tokensIn"], v["tokensOut"], v["judgeCalls"], v["cacheHits"])
            for label, v in out["versions"].items()} == {"verdicts": (0, 0, 0, 40), "half@draft": (0, 0, 0, 40)}
    for shown in (invoke("compare", parent, f"half@draft={child}", *common).stdout,
                  invoke("compare", "--runs", out["runIds"][0]).stdout):  # the same, read from the store
        rows = [line for line in shown.splitlines() if line.split()[:2] in (["verdicts", "verdicts"],
                                                                             ["half@draft", "half"])]
        assert len(rows) == 2 and all(row.endswith("all answers from the cache (40 hits)") for row in rows), shown


# --- direction elsewhere: spec, list, summaries, thresholds --------------------------------------


def test_direction_in_the_plan_list_and_summary(write_spec, tmp_path, monkeypatch):
    path = write_spec("risk", NUMERIC.read_text(encoding="utf-8").replace("id: numeric", "id: risk\n"
                                                                          "direction: lower_is_better"))
    assert load_scorer(str(path)).plan.direction == "lower_is_better"
    assert load_scorer(str(NUMERIC)).plan.direction == "higher_is_better"
    monkeypatch.chdir(tmp_path)
    listed = invoke("list")
    row = next(line for line in listed.stdout.splitlines() if line.startswith("risk "))
    assert " lower " in row
    assert " higher " in next(line for line in listed.stdout.splitlines() if line.startswith("faithfulness "))
    summary = run_evals([{"id": 1, "output": "0.4"}], [str(path)], thresholds={"risk": 0.5}, store=False)
    assert summary.scorers["risk"].direction == "lower_is_better" and summary.verdict == "passed"
    assert summary.to_json_dict()["scorers"]["risk"]["direction"] == "lower_is_better"


@pytest.mark.parametrize(("direction", "limit", "verdict"), [
    ("higher_is_better", "0.5", "below_threshold"), ("lower_is_better", "0.5", "passed"),
    ("higher_is_better", "0.3", "passed"), ("lower_is_better", "0.3", "below_threshold"),
    ("lower_is_better", "0.5:", "below_threshold"), ("lower_is_better", ":0.5", "passed")])
def test_eval_threshold_follows_the_direction(write_spec, tmp_path, direction, limit, verdict):
    path = write_spec("risk", NUMERIC.read_text(encoding="utf-8").replace("id: numeric", f"id: risk\n"
                                                                          f"direction: {direction}"))
    data = write_jsonl(tmp_path / "items.jsonl", [{"id": 1, "output": "0.4"}])
    result = invoke("eval", path, "--data", data, "--threshold", f"risk={limit}", "--quiet", "--json")
    assert json.loads(result.stdout)["verdict"] == verdict
    assert result.exit_code == {"passed": 0, "below_threshold": 1}[verdict]


def test_a_limit_turns_with_the_direction():
    limit = Threshold.parse("0.8")
    assert limit.for_direction("higher_is_better") == Threshold(0.8, None, True)
    assert limit.for_direction("lower_is_better") == Threshold(None, 0.8, True)
    assert str(limit.for_direction("lower_is_better")) == "≤ 0.8"
    assert Threshold.parse("0.2:0.9").for_direction("lower_is_better") == Threshold(0.2, 0.9)
    assert Threshold.parse(0.8).for_direction("lower_is_better").met(0.7)


# --- two versions in one run; the spec text each run keeps ---------------------------------------


def test_two_versions_in_one_eval_and_their_options_by_label(tmp_path):
    data = write_jsonl(tmp_path / "items.jsonl", [{"id": 1, "output": "0.5"}])
    result = invoke("eval", NUMERIC, f"numeric@ten={NUMERIC}", "--data", data, "--option", "numeric@ten.scale=10",
                    "--quiet", "--json")
    assert result.exit_code == 0, result.output
    scorers = json.loads(result.stdout)["scorers"]
    assert {label: (s["scorer"], s["mean"]) for label, s in scorers.items()} == {"numeric": ("numeric", 0.5),
                                                                                 "numeric@ten": ("numeric", 5.0)}
    both = invoke("eval", NUMERIC, f"numeric@ten={NUMERIC}", "--data", data, "--option", "numeric.scale=10",
                  "--quiet", "--json")
    assert {s["mean"] for s in json.loads(both.stdout)["scorers"].values()} == {5.0}  # ID.key: every version
    twice = invoke("eval", NUMERIC, NUMERIC, "--data", data, "--quiet")
    assert twice.exit_code == 2 and "scorer label 'numeric' is given twice" in twice.stderr


def test_show_prints_the_spec_a_run_used_and_writes_it_to_run_again(write_spec, tmp_path):
    base = write_spec("base", NUMERIC.read_text(encoding="utf-8").replace("id: numeric", "id: base"))
    child = write_spec("mine", """
        format: 1
        id: mine
        extends: base
        score:
          formula: "run.output | float * options.scale * 0.5"
        """)
    data = write_jsonl(tmp_path / "items.jsonl", [{"id": 1, "output": "0.8"}])
    first = run_evals(str(data), [f"v1={child}"])
    child.write_text(child.read_text(encoding="utf-8").replace("* 0.5", "* 0.25"), encoding="utf-8")
    base.write_text(base.read_text(encoding="utf-8").replace("name: Numeric", "name: Changed"), encoding="utf-8")
    shown = invoke("show", first.run_id, "--spec", "v1")
    assert shown.exit_code == 0, shown.output
    assert 'formula: "run.output | float * options.scale * 0.5"  # ' in shown.stdout
    assert 'name: "Numeric"  # ' in shown.stdout and "extends" not in shown.stdout.split("\n", 1)[1]
    out_dir = tmp_path / "v1"
    written = invoke("show", first.run_id, "--spec", "v1", "--write", out_dir)
    assert written.exit_code == 0, written.output
    again = run_evals(str(data), [f"v1={out_dir / 'scorer_specs' / 'mine.yaml'}", f"now={child}"], store=False)
    assert again.scores == {"v1": 0.4, "now": 0.2}  # the kept version, and the edited one
    missing = invoke("show", first.run_id, "--spec", "nope")
    assert missing.exit_code == 2 and "has no scorer labelled 'nope' (its labels: v1)" in missing.stderr


def test_a_store_of_version_2_gains_the_specs_table(tmp_path):
    import sqlite3

    path = tmp_path / "v2.sqlite"
    Store(path).close()
    db = sqlite3.connect(path)
    db.execute("DROP TABLE specs")
    db.execute("PRAGMA user_version = 2")
    db.commit()
    db.close()
    with Store(path) as store:
        store.record_spec("h", "numeric", [("a.yaml", "x: 1")], {"t.j2": "hi"})
        assert store.spec("h")["sources"] == [("a.yaml", "x: 1")] and store.spec("nope") is None


def test_python_takes_label_equals_spec_references(tmp_path):
    summary = run_evals([{"id": 1, "output": "0.5"}], [str(NUMERIC), f"again={NUMERIC}"], store=False)
    assert summary.scores == {"numeric": 0.5, "again": 0.5}
    with pytest.raises(ValueError, match="expected SPEC or LABEL=SPEC"):
        run_evals([{"id": 1, "output": "0.5"}], [f"={NUMERIC}"], store=False)


def test_compare_refuses_too_few_versions_or_no_data(tmp_path):
    assert "give at least two versions" in invoke("compare", NUMERIC, "--data", NUMERIC).stderr
    assert "--data FILE is required" in invoke("compare", NUMERIC, NUMERIC).stderr
    with pytest.raises(ValueError, match="give data"):
        compare([str(NUMERIC), f"b={NUMERIC}"])



def test_a_mistyped_positive_label_is_refused_before_any_version_runs(write_spec, tmp_path):
    labelled_specs(write_spec)
    rows = [{"id": n, "output": "0.5", "ground_truth": "0.5", "label": lab} for n, lab in enumerate(["ok", "ok", "bad"])]
    data = write_jsonl(tmp_path / "items.jsonl", rows)
    result = invoke("compare", NUMERIC, tmp_path / "scorer_specs" / "by_truth.yaml", "--data", data, "--positive",
                    "okk", "--quiet", "--out", tmp_path / "out.jsonl")
    assert result.exit_code == 2, result.output
    message = " ".join(result.stderr.split())
    assert "no labelled item has the --positive label 'okk' in 'label'; the labels seen: 'ok' (2), 'bad' (1)" in message
    assert "did you mean 'ok'?" in message
    assert not (tmp_path / "out.jsonl").exists()
