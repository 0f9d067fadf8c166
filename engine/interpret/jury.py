"""A stage's question asked by a jury: each juror once (or ``samples`` times), their answers reduced.

For a prompt stage with a `engine.spec.plans.JuryPlan`, every question (the stage's one, or each
``for_each`` element's) is asked of each juror in the jury's order, as the stage is asked of one
judge (`PromptRunner._sampled`: re-asks, checks, samples), its calls naming the juror
(`JudgeCall.model`, answered by that juror's own judge stack: `engine.judge.jury`).

- A juror that fails after its retries and re-asks (a judge-side kind: ``judge``, ``check``,
  ``transport``, ``truncated``, ``content_filter``, ``prompt_too_long``, ``auth``, ``unsupported``,
  ``not_found``: a model its server does not know)
  is left out; its `JurorRecord` keeps the error. Any other failure (an expression) fails the item.
- With fewer answers than ``min_successful`` the question fails (kind ``judge``), the message
  naming each failed model and why.
- The answers, in the jury's order, are reduced by the jury's reduction exactly as a stage's
  samples are (`engine.interpret.reduce`; ties as there); the record's `agreement` is the
  reduction's (for a vote: the share of answering jurors whose vote is the jury's).

The stage record (`PromptStageRecord`) keeps each juror's `JurorRecord` and, for a vote, each
question's votes (`jury_votes`), from which a run's summary computes the jurors' agreement
(`engine.run.jury_stats`). The result's `jurors` totals each juror's usage and failures.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Generator, Iterable, Mapping
from typing import Any

from ..core.errors import ScorerRunError
from ..core.result import JurorRecord, JurorTotals, PromptStageRecord
from ..spec.plans import JuryPlan, PromptStagePlan, ScorerPlan
from .values import evaluate, score_of

__all__ = ["LEFT_OUT", "ask_jury", "gather_jurors", "juror_scores", "jury_totals", "vote_of"]

Steps = Generator[Any, Any, Any]

LEFT_OUT = frozenset({"judge", "check", "transport", "truncated", "content_filter", "prompt_too_long", "auth",
                      "unsupported", "not_found"})
"""The failure kinds that leave a juror out of a question instead of failing the item."""


def vote_of(answer: Any, fields: tuple[str, ...]) -> Any:
    """A juror's vote: the value of the one voted field, or a mapping of the voted fields' values."""
    if not isinstance(answer, Mapping):
        return answer
    if len(fields) == 1:
        return answer.get(fields[0])
    return {name: answer.get(name) for name in fields}


def ask_jury(stage_id: str, jury: JuryPlan, work: Any, new_part: Callable[[], Any],
             ask: Callable[[str, Any], Steps], reduce: Callable[[list[Any]], Any],
             gather: Callable[[list[Any], Any], None]) -> Steps:
    """One question of the stage `stage_id` asked of its `jury`, recorded in `work` (a
    `StageWork`); returns the reduced answer. `new_part()` makes a juror's `StageWork`;
    ``ask(model, part)`` asks the question of one juror (`PromptRunner._sampled` naming it);
    ``reduce(answers)`` gives the `engine.interpret.reduce.Reduced` of the answers;
    ``gather(parts, answer)`` adds what the answering jurors' parts hold to `work`. Raises
    `ScorerRunError` as the module says."""
    record: PromptStageRecord = work.record
    jurors: dict[str, JurorRecord] = {}
    parts: dict[str, Any] = {}
    answers: dict[str, Any] = {}
    raws: dict[str, Any] = {}
    for model in jury.models:
        part = parts[model] = new_part()
        juror = jurors[model] = JurorRecord()
        try:
            answers[model] = juror.answer = yield from ask(model, part)
        except ScorerRunError as exc:
            if exc.kind not in LEFT_OUT:
                raise
            juror.error = f"{exc.kind}: {exc.message}"
        finally:
            juror.attempts, juror.usage = part.record.attempts, part.record.usage
            juror.samples, juror.agreement = part.record.samples, part.record.agreement
            record.attempts += part.record.attempts
            record.usage.add(part.record.usage)
            record.prompt = part.record.prompt or record.prompt
            raws[model] = part.record.raw_answer
            record.jurors, record.raw_answer = jurors, json.dumps(raws, ensure_ascii=False)
    if len(answers) < jury.min_successful:
        failed = "; ".join(f"{model} ({juror.error})" for model, juror in jurors.items() if juror.error)
        raise ScorerRunError("judge", f"the jury needs {jury.min_successful} of its {len(jury.models)} jurors' "
                             f"answers and got {len(answers)}: failed {failed}", stage=stage_id,
                             attempts=record.attempts, usage=record.usage)
    reduced = reduce(list(answers.values()))
    record.agreement, record.spread = reduced.agreement, reduced.spread
    if jury.reduction.method in ("majority", "unanimous"):
        record.jury_votes = [{model: vote_of(answer, jury.reduction.fields) for model, answer in answers.items()}]
    gather([parts[model] for model in answers], reduced.answer)
    return reduced.answer


def gather_jurors(record: PromptStageRecord, parts: Iterable[PromptStageRecord]) -> None:
    """A ``for_each`` stage's jurors from its elements' records: per juror the answers as a list
    (one per element), attempts and usage summed, the first error kept; the votes of every
    element in order; the lowest element agreement."""
    merged: dict[str, JurorRecord] = {}
    votes: list[dict[str, Any]] = []
    agreements: list[float] = []
    for part in parts:
        for model, juror in (part.jurors or {}).items():
            into = merged.setdefault(model, JurorRecord(answer=[]))
            into.answer.append(juror.answer)
            into.attempts += juror.attempts
            into.usage.add(juror.usage)
            into.error = into.error or juror.error
        votes.extend(part.jury_votes or [])
        if part.agreement is not None:
            agreements.append(part.agreement)
    if merged:
        record.jurors = merged
        record.jury_votes = votes or None
        record.agreement = min(agreements) if agreements else None


def juror_scores(plan: ScorerPlan, ns: Mapping[str, Any], result: Any) -> None:
    """Each juror's own score on a scored result (`JurorTotals.score`): the spec's ``let`` and formula
    over the item's names with each stage a jury asked taking that juror's answer (through the
    stage's ``result``) in place of the jury's; later stages keep what the jury's answers made of
    them. None for a juror left out of a question, a stage asked per element (``for_each``), or a
    formula that fails on its answers."""
    stages = [s for s in plan.stages if isinstance(s, PromptStagePlan) and s.jury is not None]
    for model, total in (result.jurors or {}).items():
        own = dict(ns)
        try:
            for stage in stages:
                record = result.stages.get(stage.id)
                if record is None or record.skipped:
                    continue
                juror = (record.jurors or {}).get(model)
                if stage.for_each is not None or juror is None or juror.answer is None:
                    raise _NoScore
                own[stage.id] = juror.answer if stage.result is None else evaluate(
                    stage.result, {**own, "answer": juror.answer}, f"{stage.id}.result")
            for name, expression in plan.score.let:
                own[name] = evaluate(expression, own, f"score.let.{name}")
            total.score = score_of(plan.score, own)
        except (_NoScore, ScorerRunError):
            total.score = None


class _NoScore(Exception):
    """A juror's answers give no score of its own."""


def jury_totals(records: Iterable[Any]) -> dict[str, JurorTotals] | None:
    """Each juror's usage and failed questions over a result's stage `records`; None without a jury."""
    totals: dict[str, JurorTotals] = {}
    for record in records:
        for model, juror in (getattr(record, "jurors", None) or {}).items():
            total = totals.setdefault(model, JurorTotals())
            total.usage.add(juror.usage)
            if juror.error is not None:
                total.failed += 1 if not isinstance(juror.answer, list) else sum(a is None for a in juror.answer)
    return totals or None
