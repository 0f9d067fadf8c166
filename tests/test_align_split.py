"""The honest split, the selection figures and the test comparison of `scorespec align`, and the
spec's documented cut-off (`cutoff`) that calibrate, compare and eval read."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from engine.alignment.selection import BINARY, GRADED, Figures, best_index, compare_on_test, figures
from engine.alignment.split import parse_fractions, stratified_split
from engine.core.errors import SpecError
from engine.spec.compile import load_spec


def _strata(pos: int, neg: int) -> dict[str, str]:
    return {**{f"p{i}": "pos" for i in range(pos)}, **{f"n{i}": "neg" for i in range(neg)}}


def test_split_is_stratified_seeded_and_disjoint():
    strata = _strata(40, 20)
    one = stratified_split(strata, seed=3)
    assert one.counts() == {"train": 30, "dev": 15, "test": 15}
    assert sum(k.startswith("p") for k in one.test) == 10 and sum(k.startswith("n") for k in one.test) == 5
    assert set(one.train) | set(one.dev) | set(one.test) == set(strata)
    assert not (set(one.train) & set(one.test)) and not (set(one.dev) & set(one.test))
    assert stratified_split(strata, seed=3) == one
    assert stratified_split(strata, seed=4).test != one.test


def test_split_keeps_the_data_order_within_each_part():
    strata = _strata(8, 8)
    split = stratified_split(strata, seed=1)
    order = list(strata)
    assert list(split.train) == sorted(split.train, key=order.index)


def test_split_without_test_part_gives_train_and_dev_only():
    split = stratified_split(_strata(6, 6), (2 / 3, 1 / 3, 0.0), seed=0)
    assert split.counts() == {"train": 8, "dev": 4, "test": 0}


def test_split_refuses_bad_fractions_and_empty_parts():
    with pytest.raises(ValueError, match="sum to 1"):
        parse_fractions("0.5,0.5,0.5")
    with pytest.raises(ValueError, match="three numbers"):
        parse_fractions("0.5,0.5")
    with pytest.raises(ValueError, match="empty dev"):
        stratified_split({"a": 1}, seed=0)


def test_figures_binary_at_the_cutoff():
    found = figures([0.9, 0.8, 0.2, 0.6], [True, True, False, False], BINARY, cutoff=0.5)
    assert found.balanced_accuracy == 0.75 and found.roc_auc == 1.0 and found.n == 4


def test_best_index_prefers_balanced_accuracy_then_auc_then_the_earliest():
    ranked = [Figures(4, 0.75, 0.8), Figures(4, 0.75, 0.9), Figures(4, 0.7, 1.0), Figures(4, 0.75, 0.9)]
    assert best_index(ranked, BINARY) == 1
    assert best_index([Figures(4, spearman=0.1), Figures(4, spearman=0.4)], GRADED) == 1
    assert best_index([], BINARY) is None


def test_test_comparison_uses_mcnemar_on_decisions():
    truth = [True] * 10 + [False] * 10
    parent = [0.9, 0.1] * 10  # right on half
    child = [0.9] * 10 + [0.1] * 10  # right on all
    found = compare_on_test(parent, child, truth, BINARY, 0.5, 0.5)
    assert found.parent.balanced_accuracy == 0.5 and found.child.balanced_accuracy == 1.0
    assert found.mcnemar.version_only == 10 and found.mcnemar.baseline_only == 0
    assert found.p_value == pytest.approx(2 * 0.5 ** 10)
    assert found.better and "child's balanced accuracy is 1.000" in found.words
    worse = compare_on_test(child, parent, truth, BINARY, 0.5, 0.5)
    assert not worse.better and worse.words.startswith("the child is not better")


def test_test_comparison_graded_uses_a_seeded_paired_bootstrap():
    truth = [1, 2, 3, 4, 5, 6, 7, 8]
    parent = [3, 1, 4, 1, 5, 9, 2, 6]
    child = [1, 2, 3, 4, 5, 6, 8, 7]
    found = compare_on_test(parent, child, truth, GRADED, seed=1)
    assert found.child.spearman > 0.9 and found.better
    assert found.bootstrap.difference == pytest.approx(found.child.spearman - found.parent.spearman)
    assert found.bootstrap.ci95[0] <= found.bootstrap.difference <= found.bootstrap.ci95[1]
    assert compare_on_test(parent, child, truth, GRADED, seed=1).bootstrap == found.bootstrap


def _spec(tmp_path: Path, body: str) -> Path:
    path = tmp_path / "scorer_specs" / "cut.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(body), encoding="utf-8")
    return path


def test_spec_cutoff_is_on_the_plan_and_rescaled_with_the_scale(tmp_path):
    from engine import load_scorer

    path = _spec(tmp_path, """\
        format: 1
        id: cut
        extends: equals
        cutoff: 0.8
        """)
    plan = load_spec(path)
    assert plan.cutoff == 0.8 and plan.default_scale == 1.0
    assert load_scorer(str(path), options={"scale": 10}).cutoff == pytest.approx(8.0)


def test_spec_cutoff_above_the_scale_is_a_load_error(tmp_path):
    path = _spec(tmp_path, """\
        format: 1
        id: cut
        extends: equals
        cutoff: 1.5
        """)
    with pytest.raises(SpecError, match="above the score's scale"):
        load_spec(path)


def test_calibrate_and_compare_default_to_the_spec_cutoff(tmp_path):
    from engine import calibrate, compare, load_scorer

    path = _spec(tmp_path, """\
        format: 1
        id: cut
        extends: equals
        cutoff: 1
        """)
    data = [{"id": "a", "output": "x", "ground_truth": "x", "label": "good"},
            {"id": "b", "output": "x", "ground_truth": "y", "label": "bad"}]
    report = calibrate(load_scorer(str(path)), data, positive=["good"], store=False)
    assert report.cutoff == 1 and any("documented cut-off" in n for n in report.notes)
    found = compare([load_scorer(str(path)), load_scorer("equals", label="other")], data, label_field="label",
                    positive=["good"], store=False)
    assert found.versions["cut"].cutoff == 1
    assert found.comparisons[0].labels.cutoff == 1


def test_item_cutoff_spec_reads_each_scorers_cutoff():
    from engine import load_scorer
    from engine.cli.ci_files import spec_cutoff_pairs

    quick = load_scorer("faithfulness_quick", model="openai/gpt-4o-mini")
    exact = load_scorer("equals")
    assert spec_cutoff_pairs(["spec"], [quick, exact]) == ["faithfulness_quick=0.7"]
    assert spec_cutoff_pairs(["faithfulness_quick=spec", "equals=1"], [quick, exact]) == [
        "faithfulness_quick=0.7", "equals=1"]
    with pytest.raises(ValueError, match="documents no cut-off"):
        spec_cutoff_pairs(["equals=spec"], [quick, exact])


def test_check_parts_asks_each_class_for_two_train_one_dev_one_test_item():
    from engine.alignment.split import check_parts, per_stratum

    names = {True: "positive", False: "negative"}
    strata = {**{f"p{i}": True for i in range(4)}, **{f"n{i}": False for i in range(4)}}
    check_parts(stratified_split(strata, seed=0), strata, None, names)  # 2 / 1 / 1 of each: enough
    small = {k: v for k, v in strata.items() if k != "n3"}
    with pytest.raises(ValueError, match=r"train has 1 negative item\(s\), needs 2"):
        check_parts(stratified_split(small, seed=0), small, None, names)
    assert per_stratum((0.5, 0.25, 0.25)) == 4 and per_stratum((0.8, 0.2, 0.0)) == 3
    graded = {f"g{i}": i % 2 for i in range(6)}
    with pytest.raises(ValueError, match=r"train has 2 item\(s\), needs 4"):
        check_parts(stratified_split(graded, seed=0), graded, None, None)
