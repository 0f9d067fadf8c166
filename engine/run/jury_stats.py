"""How far a scorer's jurors agree over a run: Fleiss' kappa, the share agreeing, the jurors left out.

A stage a jury answers by a vote records, per question, each answering juror's vote
(`engine.core.result.PromptStageRecord.jury_votes`). Over a run's results, per stage:

- **agreeing**: the share of questions (with two votes or more) on which every answering juror
  voted alike — the figure for binary verdicts;
- **kappa**: Fleiss' kappa over those questions (Fleiss, J. L. (1971), "Measuring nominal scale
  agreement among many raters", Psychological Bulletin 76(5), 378–382), each vote a category:
  P_i = (Σ_j n_ij² − n_i) / (n_i (n_i − 1)) per question i with n_i votes, n_ij of them for
  category j; P̄ their mean; p_j = Σ_i n_ij / Σ_i n_i; P̄e = Σ_j p_j²; κ = (P̄ − P̄e) / (1 − P̄e).
  A question whose juror was left out counts with the votes it got (the formula's per-question
  n_i). None when every vote is a boolean (binary verdicts: read `agreeing`), when no question
  has two votes, or when every vote falls in one category (P̄e = 1: agreement cannot be told
  from chance).

`failed`: per juror, the questions it was left out of (it failed after its retries).
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

__all__ = ["JuryStats", "fleiss_kappa", "jury_of"]

JuryRecord = tuple[tuple[tuple[str, list[dict[str, Any]]], ...], tuple[tuple[str, int], ...]]
"""What a result says of its jury: ((stage, votes per question), …), ((juror, questions failed), …)."""


def fleiss_kappa(counts: Sequence[Sequence[int]]) -> float | None:
    """Fleiss' kappa of a table: one row per question, one column per category, each cell the
    votes that question got for that category (see the module for the formula). Rows with fewer
    than two votes are left out. None when no row is left or the chance agreement is 1. Raises
    `ValueError` for a negative count or rows of different lengths."""
    rows = [list(row) for row in counts]
    if any(len(row) != len(rows[0]) for row in rows) or any(v < 0 for row in rows for v in row):
        raise ValueError("fleiss_kappa: rows of one length and counts ≥ 0 are needed")
    rows = [row for row in rows if sum(row) >= 2]
    if not rows:
        return None
    observed = sum((sum(v * v for v in row) - sum(row)) / (sum(row) * (sum(row) - 1)) for row in rows) / len(rows)
    total = sum(sum(row) for row in rows)
    chance = sum((sum(row[j] for row in rows) / total) ** 2 for j in range(len(rows[0])))
    if chance >= 1.0:
        return None
    return (observed - chance) / (1.0 - chance)


def jury_of(result: Mapping[str, Any]) -> JuryRecord | None:
    """The jury part of a result's JSON (camelCase, as the out file and the store hold it): each
    stage's votes and each juror's failed questions; None for a result without a jury."""
    jurors = result.get("jurors")
    if not isinstance(jurors, Mapping):
        return None
    stages = result.get("stages") if isinstance(result.get("stages"), Mapping) else {}
    votes = tuple((str(stage), list(record["juryVotes"])) for stage, record in stages.items()
                  if isinstance(record, Mapping) and isinstance(record.get("juryVotes"), list))
    failed = tuple((str(model), int(total.get("failed") or 0)) for model, total in jurors.items()
                   if isinstance(total, Mapping))
    return votes, failed


@dataclass
class _StageVotes:
    questions: list[list[str]] = field(default_factory=list)  # each question's votes, as JSON text
    booleans: bool = True


@dataclass
class JuryStats:
    """One scorer's jury over a run: `add` each result's `jury_of`, then `summary`."""

    stages: dict[str, _StageVotes] = field(default_factory=dict)
    failed: Counter = field(default_factory=Counter)
    results: int = 0

    def add(self, found: JuryRecord | None) -> None:
        if found is None:
            return
        self.results += 1
        votes, failed = found
        for stage, questions in votes:
            into = self.stages.setdefault(stage, _StageVotes())
            for question in questions:
                if not isinstance(question, Mapping):
                    continue
                values = list(question.values())
                into.booleans = into.booleans and all(isinstance(v, bool) for v in values)
                into.questions.append([json.dumps(v, sort_keys=True, ensure_ascii=False) for v in values])
        for model, n in failed:
            self.failed[model] += n

    def summary(self) -> dict[str, Any] | None:
        """``{"stages": {id: {"questions", "agreeing", "kappa"}}, "failed": {juror: n}}``, or None
        when no result had a jury."""
        if not self.results:
            return None
        return {"stages": {stage: _stage_summary(votes) for stage, votes in self.stages.items()},
                "failed": dict(self.failed)}


def _stage_summary(votes: _StageVotes) -> dict[str, Any]:
    asked = [q for q in votes.questions if len(q) >= 2]
    agreeing = sum(len(set(q)) == 1 for q in asked) / len(asked) if asked else None
    kappa = None
    if asked and not votes.booleans:
        categories = sorted({v for q in asked for v in q})
        kappa = fleiss_kappa([[Counter(q)[c] for c in categories] for q in asked])
    return {"questions": len(asked), "agreeing": agreeing, "kappa": kappa}
