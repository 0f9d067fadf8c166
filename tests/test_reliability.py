"""Reliability under faults and kills (issue 7): the checks of `tests/reliability/run.py`,
asserted. A 300-item faithfulness eval with about one judge request in five faulted (every
fault kind of `engine.testing.faults`), resumed until done; and `python -m engine eval` killed
with SIGKILL at seeded moments, resumed, compared with an uninterrupted run."""

from __future__ import annotations

import pytest
from reliability.run import RATES, fault_eval, sigkill_trials

from engine.testing.faults import KINDS

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def faults(tmp_path_factory):
    return fault_eval(tmp_path_factory.mktemp("faults"), 300, seed=7)


def test_every_fault_kind_is_injected_at_about_its_rate(faults):
    assert set(RATES) == set(KINDS)
    assert all(faults.injected[kind] >= 1 for kind in KINDS), faults.injected
    total = sum(faults.injected.values())
    assert 0.14 <= total / faults.requests <= 0.26  # 20% of requests, drawn
    assert sum(sum(c.values()) for c in faults.injected_per_round) == total


def test_the_faulted_run_explains_every_failure_and_never_misscores(faults):
    first = faults.rounds[0]
    assert (first.lost, first.duplicated, first.unreadable, first.unexplained) == (0, 0, 0, 0)
    assert first.lines == 300 and first.store_rows == 300 and first.store_agrees
    assert first.wrong_scores == 0  # every score is the designed one: no partial or misread answer
    # 15 items are designed not scorable (no claims); a fault that cuts off one's claims answer fails
    # it instead (kind truncated, at preprocess), never scores it
    preprocess_failures = sum(n for key, n in first.failures.items() if key.startswith("preprocess/"))
    assert 15 - preprocess_failures <= first.outcomes["not_scorable"] <= 15
    assert first.outcomes["scored"] + first.outcomes["failed"] + first.outcomes["not_scorable"] == 300
    assert first.outcomes["failed"] >= 1
    kinds = {key.split("/")[1] for key in first.failures}
    assert kinds <= {"truncated", "transport", "judge"}, first.failures
    # each cut-off answer failed its item (no retry hides it, no partial parse scores it)
    truncated = sum(n for key, n in first.failures.items() if key.endswith("/truncated"))
    assert truncated == faults.injected_per_round[0]["truncated"] >= 1
    for record in first.records.values():
        if record["error"]:
            assert record["score"] is None and record["reason"] is None
            assert record["error"]["stage"] in ("preprocess", "analyze") and record["error"]["attempts"] >= 1
            if record["error"]["kind"] == "truncated":
                assert "cut off at max_tokens" in record["error"]["message"]
                assert record["error"]["rawAnswer"]  # the partial text is kept for the reader


def test_resuming_with_faults_still_on_finishes_every_item_once(faults):
    final = faults.final
    assert 2 <= len(faults.rounds) <= 4
    assert len(faults.run_ids) == 1
    assert final.outcomes == {"scored": 285, "not_scorable": 15}
    assert (final.lost, final.duplicated, final.unreadable, final.wrong_scores) == (0, 0, 0, 0)
    assert final.lines == final.store_rows == 300 and final.store_agrees
    for later, check in enumerate(faults.rounds[1:], start=1):  # a resume asks only for the failed items
        assert check.lines == 300 and check.store_agrees
        assert sum(faults.injected_per_round[later].values()) < sum(faults.injected_per_round[0].values()) / 3


def test_sigkill_at_random_moments_then_resume_equals_an_uninterrupted_run(tmp_path):
    report = sigkill_trials(tmp_path, 30, trials=2, seed=3, kills_per_trial=2)
    assert len(report.trials) == 2
    assert sum(len(t.kills) for t in report.trials) >= 3  # processes really killed mid-run
    for trial in report.trials:
        assert len(trial.kills) + trial.finished_early == 2
        c = trial.check
        assert trial.same_as_uninterrupted
        assert (c.lost, c.duplicated, c.unreadable, c.wrong_scores, c.unexplained) == (0, 0, 0, 0, 0)
        assert c.lines == c.store_rows == 30 and c.store_agrees
        assert c.outcomes == {"scored": 29, "not_scorable": 1}
        assert trial.runs_for_out == 1  # one run per out file, however often it was killed
