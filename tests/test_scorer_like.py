"""What a batch run needs of a scorer (`engine.core.scorer_like.ScorerLike`): a `Scorer` is used
as it is; any other object with ``id``, ``run`` and ``arun`` is wrapped once (`ForeignScorer`),
its missing capabilities given their defaults there, and runs like one."""

from __future__ import annotations

from pathlib import Path

import pytest

from engine.bind.load import load_scorer
from engine.core.result import ItemError, ScoreResult
from engine.core.scorer_like import ForeignScorer, SpecFree
from engine import run_evals
from engine.run.evals import resolve_scorers

NUMERIC = str(Path(__file__).resolve().parent / "specs" / "numeric.yaml")  # score = the output as a number


class Length:
    """A scorer object with nothing but an id, `run` and `arun`: the output's length over 10."""

    id = "length"

    def run(self, **fields) -> ScoreResult:
        text = fields.get("output") or ""
        made = {"scorer": self.id, "label": self.id, "spec_version": 0, "spec_hash": ""}
        if text == "boom":
            return ScoreResult(**made, error=ItemError(kind="internal", message="boom"))
        return ScoreResult(**made, score=len(text) / 10)

    async def arun(self, **fields) -> ScoreResult:
        return self.run(**fields)


@pytest.fixture(autouse=True)
def _isolated_store(tmp_path, monkeypatch):
    monkeypatch.setenv("SCORESPEC_STORE", str(tmp_path / "store.sqlite"))


def test_a_scorer_is_used_as_it_is_and_another_object_is_wrapped_once():
    scorer = load_scorer(NUMERIC)
    resolved, foreign = resolve_scorers([scorer, Length()])
    assert resolved is scorer
    assert isinstance(foreign, ForeignScorer) and resolve_scorers([foreign])[0] is foreign


def test_an_object_without_a_spec_gets_the_defaults_a_run_reads():
    foreign = ForeignScorer(Length())
    assert (foreign.id, foreign.label, foreign.model, foreign.cutoff, dict(foreign.options)) == (
        "length", "length", None, None, {})
    assert foreign.plan == SpecFree("length")
    assert (foreign.plan.uses_judge, foreign.plan.hash, foreign.plan.version, dict(foreign.plan.declared),
            foreign.plan.sources, foreign.plan.direction) == (True, None, 0, {}, (), "higher_is_better")
    assert foreign.with_samples(3) is foreign and foreign.with_language("fr") is foreign
    with pytest.raises(AttributeError):
        foreign.scale  # noqa: B018  (it has none; a run records None for its scale)


def test_an_object_keeps_the_label_and_direction_it_names():
    inner = Length()
    inner.label, inner.direction = "short", "lower_is_better"
    foreign = ForeignScorer(inner)
    assert (foreign.label, foreign.plan.direction) == ("short", "lower_is_better")


def test_a_scorer_object_runs_in_a_batch_run_beside_a_spec():
    summary = run_evals([{"output": "0.5"}, {"output": "boom"}, {"output": "1"}], [NUMERIC, Length()],
                        thresholds={"length": 0.2}, store=False, samples=2, language="fr")
    length = summary.scorers["length"]
    assert (length.scored, length.failed, length.mean, length.spec_hash, length.direction) == (
        2, 1, 0.2, None, "higher_is_better")
    assert length.threshold_met is True
    assert list(summary.scorers) == ["numeric", "length"] and summary.scorers["numeric"].scored == 3
