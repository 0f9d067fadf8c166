"""Running a prompt stage: its judge calls (one, one per ``for_each`` element, or several samples
reduced to one answer), recorded in the stage's `PromptStageRecord`.

Each runner is a generator yielding `JudgeCall`s (or a `FanOut` of element runners) and receiving
the judge's answers, as `engine.interpret.interpreter` drives it. The call carries the stage plan's
compiled answer schema (`PromptStagePlan.answer_for`): the plan's own object for a schema known at
load, one built per call for a schema with ``{$expr}`` values.

What the interpreter keeps for itself beside a record (the label probabilities expressions see,
how many answers counted by their hard label, how many items the judge listed) lives in
`StageWork`, never on the record.

A stage with ``keep_first`` gets each answer with its lists as the judge wrote them (the contract
judged them cut: `engine.judge.contract.AnswerContract.kept`); `PromptRunner.ask` cuts them to their
first ``maxItems`` before anything reads the answer, and counts what was listed. A stage with
``pages`` asks again, in the same conversation, while a list comes back full (`engine.interpret.pages`):
the record then sums the pages' attempts and usage and lists their raw answers as a JSON list.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Generator
from dataclasses import dataclass, field
from typing import Any

from ..core.answer_probs import mean_probs, with_hard_labels
from ..core.answer_schema import AnswerSchema
from ..core.errors import ScorerRunError
from ..core.result import PromptStageRecord, Usage
from ..judge.call import JudgeCall
from ..judge.contract import AnswerContract, AnswerInvalid
from ..spec.expressions import Template
from ..spec.plans import PromptStagePlan, SamplingPlan
from .fan_out import FanOut
from .jury import ask_jury, gather_jurors
from .pages import MAX_PAGES, Pages
from .pairwise import run_pair
from .reduce import Reduced, agreeing_share, reduce_samples
from .values import evaluate, render, require_json

__all__ = ["PromptRunner", "StageWork", "gather_parts", "reduce_answers", "wants_probs"]

Steps = Generator[Any, Any, Any]


@dataclass
class StageWork:
    """A prompt stage's record (or one call's, a part of it) and the interpreter's own state
    beside it: `used_probs`, the label probabilities expressions see (`answer_probs.STAGE`: those
    reported, else the hard labels; with ``for_each`` one per element); `hard_labels`, per label
    field how many answers had it from their hard label although probabilities were asked for;
    `answers`, how many answers were counted; `listed`, for a stage with ``keep_first``, what
    expressions see as ``listed.STAGE``: how many items the judge listed per such field (with
    ``for_each`` one per element; a sampled question's: the most over its samples); `warnings`:
    what the result should say about this stage (a paged list cut short)."""

    record: PromptStageRecord = field(default_factory=PromptStageRecord)
    used_probs: Any = None
    hard_labels: dict[str, int] = field(default_factory=dict)
    answers: int = 0
    listed: Any = None
    warnings: list[str] = field(default_factory=list)
    sampled: int = 0  # answers per question whose label shares stood in for missing probabilities
    pair: Any = None  # a pairwise stage's `PairOutcome` (`engine.interpret.pairwise`)


def wants_probs(stage: PromptStagePlan, ns: dict[str, Any]) -> bool:
    """Whether `stage` asks the judge for label probabilities on this item (its `probabilities`)."""
    if isinstance(stage.probabilities, bool):
        return stage.probabilities
    return bool(evaluate(stage.probabilities, ns, f"{stage.id}.probabilities"))


@dataclass(frozen=True)
class PromptRunner:
    """Runs prompt stages of one scorer; `instructions` is its system message template (None:
    no system message); `juror`: the jury's model this runner asks for (`engine.interpret.jury`),
    None: the scorer's judge, or the stage's jury."""

    instructions: Template | None
    juror: str | None = None

    def stage(self, stage: PromptStagePlan, ns: dict[str, Any], work: StageWork) -> Steps:
        """The stage's result for this item (its `result` expression over ``answer``, else the
        answer; with ``for_each`` a list, one per element, or what its `collect` expression makes of
        that list); raises `ScorerRunError`."""
        if stage.for_each is not None:
            return (yield from self._each(stage, ns, work))
        if stage.pairwise is not None:
            return (yield from run_pair(self, stage, ns, work))
        answer = yield from self._sampled(stage, stage.answer_for(ns), ns, work)
        if stage.result is None:
            return answer
        return evaluate(stage.result, {**ns, "answer": answer}, f"{stage.id}.result")

    def _each(self, stage: PromptStagePlan, ns: dict[str, Any], work: StageWork) -> Steps:
        """A `for_each` stage: one judge call per element, in order; the record sums the calls'
        usage and attempts and joins their prompts and raw answers (element by element)."""
        assert stage.for_each is not None
        record = work.record
        elements = evaluate(stage.for_each, ns, f"{stage.id}.for_each")
        if isinstance(elements, (str, bytes)) or not isinstance(elements, (list, tuple)):
            raise ScorerRunError("expression", f"{stage.id}.for_each: {stage.for_each.source!r} gave "
                                 f"{type(elements).__name__}, expected a list", stage=stage.id)
        parts = [StageWork() for _ in elements]
        scopes = [{**ns, "each": element, "each_index": index} for index, element in enumerate(elements)]
        outcomes = (yield FanOut([self._element(stage, scope, part) for scope, part in zip(scopes, parts)])) \
            if elements else []
        prompts: list[str] = []
        raws: list[Any] = []
        answers: list[Any] = []
        failure: ScorerRunError | None = None
        try:
            for index, (part, outcome) in enumerate(zip(parts, outcomes)):
                if not outcome.started:
                    break
                prompts.append(part.record.prompt or "")
                raw = part.record.raw_answer
                # a sampled element's raw answers are a list: kept as one, not as its JSON text
                raws.append(json.loads(raw) if stage.samples > 1 and raw else raw or "")
                record.attempts += part.record.attempts
                record.usage.add(part.record.usage)
                if outcome.error is not None and failure is None:
                    failure = outcome.error
                    failure.message = f"element {index}: {failure.message}"
                answers.append(outcome.value)
            if failure is not None:
                raise failure
            results = [answer if stage.result is None
                       else evaluate(stage.result, {**scope, "answer": answer}, f"{stage.id}.result")
                       for scope, answer in zip(scopes, answers)]
        finally:
            record.prompt = "\n\n".join(f"[{i}]\n{p}" for i, p in enumerate(prompts)) if prompts else None
            record.raw_answer = json.dumps(raws, ensure_ascii=False) if raws else None
            _said_of_calls(record, stage, parts)
            if stage.samples > 1:
                _gather_samples(record, [part.record for part in parts[:len(prompts)]])
            if stage.jury is not None:
                gather_jurors(record, [part.record for part in parts[:len(prompts)]])
        if stage.probabilities is not False:
            _gather_probs(work, parts, each=True)
            work.sampled = max((part.sampled for part in parts), default=0)
        work.warnings.extend(dict.fromkeys(w for part in parts for w in part.warnings))
        if stage.keep_first or stage.pages:
            work.listed = [part.listed for part in parts]
            left_out = [part.record.listed for part in parts]
            record.listed = left_out if any(n is not None for n in left_out) else None
        if stage.collect is not None:
            return evaluate(stage.collect, {**ns, "results": results}, f"{stage.id}.collect")
        return results

    def _element(self, stage: PromptStagePlan, scope: dict[str, Any], part: StageWork) -> Steps:
        """One element of a `for_each` stage: its question (sampled or not), recorded in `part`."""
        return (yield from self._sampled(stage, stage.answer_for(scope), scope, part))

    def _sampled(self, stage: PromptStagePlan, schema: AnswerSchema, ns: dict[str, Any], work: StageWork) -> Steps:
        """One question of `stage`: asked once, or `stage.samples` times and reduced
        (`engine.interpret.reduce`), every sample's answer, the agreement and the spread in the
        record. A sample that fails fails the question (message prefixed ``sample i: ``). A stage
        with a jury asks each juror so (`engine.interpret.jury.ask_jury`)."""
        if stage.jury is not None and self.juror is None:
            jury = stage.jury
            return (yield from ask_jury(
                stage.id, jury, work, StageWork,
                lambda model, part: dataclasses.replace(self, juror=model)._sampled(stage, schema, ns, part),
                lambda answers: reduce_answers(stage, jury.reduction, answers, schema, ns),
                lambda parts, answer: gather_parts(stage, work, parts, answer, schema, jury.reduction.method)))
        sampling = stage.sampling
        if sampling is None or sampling.n == 1:
            answer = yield from self.ask(stage, schema, ns, work)
            if stage.sampled_probabilities and work.record.probs_source == "hard":
                return (yield from self._sampled_probs(stage, schema, ns, work, answer))
            if sampling is None or sampling.method != "expression":
                return answer
            return _reduce(stage, [answer], schema, ns).answer  # the answer is what the expression gives
        record = work.record
        samples: list[Any] = []
        raws: list[str] = []
        parts: list[StageWork] = []
        try:
            for index in range(sampling.n):
                part = StageWork()
                parts.append(part)
                try:
                    samples.append((yield from self.ask(stage, schema, ns, part, sample_index=index)))
                except ScorerRunError as exc:
                    exc.message = f"sample {index}: {exc.message}"
                    raise
                finally:
                    record.prompt = part.record.prompt
                    raws.append(part.record.raw_answer or "")
                    record.attempts += part.record.attempts
                    record.usage.add(part.record.usage)
        finally:
            record.raw_answer = json.dumps(raws, ensure_ascii=False) if raws else None
            record.samples = samples
            _said_of_calls(record, stage, parts)
        reduced = _reduce(stage, samples, schema, ns)
        record.agreement, record.spread = reduced.agreement, reduced.spread
        gather_parts(stage, work, parts, reduced.answer, schema, sampling.method)
        return reduced.answer

    def _sampled_probs(self, stage: PromptStagePlan, schema: AnswerSchema, ns: dict[str, Any], work: StageWork,
                       first: Any) -> Steps:
        """A question whose `first` answer came without the label probabilities it asked for, on a
        stage with ``sampled_probabilities: N``: N − 1 more answers at the sampling temperature, the
        answer their majority, each label's probability the share of the N answers giving it
        (``probsSource: sampled``). The record lists every answer, as for a sampled stage."""
        assert stage.sampling is not None and stage.sampled_probabilities is not None
        record = work.record
        opening = StageWork(used_probs=work.used_probs, answers=1)
        opening.record.probs_source = record.probs_source
        parts, samples, raws = [opening], [first], [record.raw_answer or ""]
        sampling = dataclasses.replace(stage.sampling, n=stage.sampled_probabilities)
        try:
            for index in range(1, sampling.n):
                part = StageWork()
                parts.append(part)
                try:
                    samples.append((yield from self.ask(stage, schema, ns, part, sample_index=index,
                                                        temperature=sampling.temperature)))
                except ScorerRunError as exc:
                    exc.message = f"sample {index}: {exc.message}"
                    raise
                finally:
                    raws.append(part.record.raw_answer or "")
                    record.attempts += part.record.attempts
                    record.usage.add(part.record.usage)
        finally:
            record.raw_answer = json.dumps(raws, ensure_ascii=False)
            record.samples = samples
            _said_of_calls(record, stage, parts)
        reduced = reduce_samples(sampling, samples, schema.schema)
        record.agreement, record.spread = reduced.agreement, reduced.spread
        _gather_probs(work, parts, each=False)
        record.answer_probs, record.probs_source = work.used_probs, "sampled"  # the shares, said as such
        work.hard_labels, work.sampled = {}, sampling.n
        return reduced.answer

    def ask(self, stage: PromptStagePlan, schema: AnswerSchema, ns: dict[str, Any], work: StageWork,
            sample_index: int | None = None, temperature: float | None = None, order: str | None = None) -> Steps:
        """One judge call for `stage` over its compiled answer `schema` (sample `sample_index` of a
        sampled question, at the sampling temperature; None: the stage asked once; `order`: a
        pairwise stage's order, `JudgeCall.order`); its prompt, raw answer, attempts and usage in
        the record."""
        record = work.record
        prompt = render(stage.template, {**ns, "examples": list(stage.examples)} if "examples" in stage.template.names
                        else ns, f"{stage.id}.prompt")
        record.prompt = prompt
        messages = []
        if self.instructions is not None:
            messages.append({"role": "system", "content": render(self.instructions, ns, "judge.instructions")})
        messages.append({"role": "user", "content": prompt})
        contract = AnswerContract.of(schema, tuple((check.expect, check.message) for check in stage.checks), ns,
                                     stage.keep_first + stage.pages)
        if temperature is None:
            temperature = stage.temperature
            if sample_index is not None and stage.sampling is not None:
                temperature = stage.sampling.temperature
        asked = stage.probabilities is not False and wants_probs(stage, ns)
        call = JudgeCall(stage.id, messages, contract, stage.max_reasks, temperature, stage.max_tokens,
                         sample_index or 0, probabilities=asked, reasoning_effort=stage.reasoning_effort,
                         reasoning_tokens=stage.reasoning_tokens, family=stage.family, order=order,
                         model=self.juror)
        try:
            reply = yield call
        except ScorerRunError as exc:  # the judge decided its kind (``check`` when a check still failed)
            record.attempts = exc.attempts
            record.raw_answer = exc.raw_answer
            record.usage = exc.usage if exc.usage is not None else Usage(calls=exc.attempts)
            raise
        record.raw_answer = reply.raw
        record.attempts = reply.attempts
        record.usage = reply.usage
        record.reasoning_effort = stage.reasoning_effort
        if sample_index is not None and getattr(reply, "sampled_at", None) is not None:
            record.sampled_at = reply.sampled_at  # a model that takes only its own temperature
        data = reply.data
        if stage.pages:  # a full list asked for again, page by page
            data = yield from self._pages(stage, schema, call, reply, work)
        if stage.keep_first:  # the lists as the judge wrote them: the first maxItems kept, the rest counted
            cutter = AnswerContract.of(schema, keep_first=stage.keep_first) if stage.pages else contract
            data, counts = cutter.kept(data)
            left_out = {name: n for name, n in counts.items() if n > len(data[name])}
            record.listed = left_out or None
            work.listed = {**(work.listed or {}), **counts}
        if stage.probabilities is not False:  # what `answer_probs` holds: reported, else the hard labels
            reported = reply.answer_probs if asked else None
            record.answer_probs = reported
            record.probs_source = ("logprobs" if reported else "hard") if asked else None
            work.used_probs, filled = with_hard_labels(data, reported, schema.labels)
            work.hard_labels = {name: 1 for name in filled} if asked else {}
            work.answers = 1
        return data

    def _pages(self, stage: PromptStagePlan, schema: AnswerSchema, call: JudgeCall, reply: Any,
               work: StageWork) -> Steps:
        """The first page's `reply` and, while a ``pages`` list of it is full, the next pages asked in
        the same conversation (`engine.interpret.pages`): the answer with every page's items. The
        record sums the pages' attempts and usage; with more than one page its raw answer is the
        JSON list of theirs. A failed page fails the question (message prefixed ``page i: ``)."""
        record = work.record
        pages = Pages(schema.schema, stage.pages, reply.data)
        _check_past_bound(call.contract, reply, pages.bounds, stage.id)
        if pages.wanted:
            record.usage = Usage()
            record.usage.add(reply.usage)
        messages = list(call.messages)
        raws = [reply.raw]
        last = reply
        try:
            while pages.wanted:
                said = last.raw if isinstance(last.raw, str) and last.raw.strip() else json.dumps(last.data)
                messages += [{"role": "assistant", "content": said}, {"role": "user", "content": pages.message()}]
                try:
                    last = yield dataclasses.replace(call, messages=list(messages), probabilities=False)
                except ScorerRunError as exc:
                    record.attempts += exc.attempts
                    record.usage.add(exc.usage if exc.usage is not None else Usage(calls=exc.attempts))
                    exc.message = f"page {pages.pages + 1}: {exc.message}"
                    raise
                raws.append(last.raw)
                record.attempts += last.attempts
                record.usage.add(last.usage)
                try:
                    _check_past_bound(call.contract, last, pages.bounds, stage.id)
                except ScorerRunError as exc:
                    exc.message = f"page {pages.pages + 1}: {exc.message}"
                    raise
                pages.add(last.data)
        finally:
            if len(raws) > 1:
                record.raw_answer = json.dumps(raws, ensure_ascii=False)
        if pages.cut_short:
            work.warnings.append(f"{stage.id}: the judge still filled {', '.join(pages.open)} on page {MAX_PAGES}, "
                                 f"the last asked; the list may go on past the {pages.listed()[pages.open[0]]} items "
                                 "judged")
        work.listed = pages.listed()
        return pages.answer


def gather_parts(stage: PromptStagePlan, work: StageWork, parts: list[StageWork], answer: Any, schema: AnswerSchema,
                 method: str = "majority") -> None:
    """What one question's answers (`parts`: its samples, or its jurors') give `work` beside the
    reduced `answer`: their warnings, what they listed (the most), their label probabilities (the
    mean; for a majority the hard labels of the answer where none reported any)."""
    work.warnings.extend(dict.fromkeys(w for part in parts for w in part.warnings))
    if stage.keep_first or stage.pages:
        work.listed = _most([part.listed for part in parts]) or {}
        work.record.listed = _most([part.record.listed for part in parts])
    if stage.probabilities is not False and parts:
        _gather_probs(work, parts, each=False)
        if method == "majority":
            _majority_labels(work, parts, answer, schema)


def reduce_answers(stage: PromptStagePlan, sampling: SamplingPlan, answers: list[Any], schema: AnswerSchema,
                   ns: dict[str, Any]) -> Reduced:
    """`answers` (non-empty) reduced by `sampling` (a stage's samples, or its jury's reduction);
    an expression reduction evaluated with ``samples`` (the answers) in scope."""
    if sampling.method != "expression":
        return reduce_samples(sampling, answers, schema.schema)
    value = evaluate(sampling.expression, {**ns, "samples": answers}, f"{stage.id}.reduce")
    require_json(value, stage.id)
    return Reduced(value, agreeing_share(answers, value))


def _check_past_bound(contract: AnswerContract, reply: Any, bounds: dict[str, int], stage_id: str) -> None:
    """A page's lists longer than their bound (`bounds`: field → ``maxItems``), which the contract
    judged cut to their first items, checked past them too, a bound's worth at a time as the rest
    of the answer; raises `ScorerRunError` (kind ``judge``) naming the first item of the part that
    does not match."""
    data = reply.data
    for name, bound in bounds.items():
        items = data.get(name) if isinstance(data, dict) else None
        if not isinstance(items, list):
            continue
        for start in range(bound, len(items), bound):
            try:
                contract.validate({**data, name: items[start:start + bound]})
            except AnswerInvalid as exc:
                raise ScorerRunError("judge", f"the answer's {name} past its first {bound} items, from item "
                                     f"{start}: {exc}", stage=stage_id, raw_answer=reply.raw,
                                     attempts=reply.attempts, usage=reply.usage) from None


def _reduce(stage: PromptStagePlan, samples: list[Any], schema: AnswerSchema, ns: dict[str, Any]) -> Reduced:
    assert stage.sampling is not None
    return reduce_answers(stage, stage.sampling, samples, schema, ns)


def _said_of_calls(record: PromptStageRecord, stage: PromptStagePlan, parts: list[StageWork]) -> None:
    """What every call of a stage of several calls (samples, ``for_each`` elements) was sent with:
    the reasoning effort asked, and the temperature a model that takes only its own sampled at."""
    record.reasoning_effort = stage.reasoning_effort
    record.sampled_at = next((p.record.sampled_at for p in parts if p.record.sampled_at is not None), None)


def _most(counts: list[dict[str, int] | None]) -> dict[str, int] | None:
    """Per field, the most of `counts` (the samples of one question); None when none has any."""
    most: dict[str, int] = {}
    for found in counts:
        for name, n in (found or {}).items():
            most[name] = max(n, most.get(name, 0))
    return most or None


def _gather_samples(record: PromptStageRecord, parts: list[PromptStageRecord]) -> None:
    """A sampled `for_each` stage's record: each element's samples and agreement, the lowest
    agreement, the largest spread per number field."""
    record.samples = [part.samples for part in parts]
    record.agreements = [part.agreement for part in parts]
    known = [a for a in record.agreements if a is not None]
    record.agreement = min(known) if known else None
    spreads = [part.spread for part in parts if part.spread is not None]
    if spreads:
        record.spread = {name: max(s[name] for s in spreads if name in s) for name in dict.fromkeys(
            name for s in spreads for name in s)}


def _majority_labels(work: StageWork, parts: list[StageWork], answer: Any, schema: AnswerSchema) -> None:
    """A question sampled and reduced by majority: each voted label field that no sample's judge
    reported probabilities for is the hard label of the majority `answer` (hard scoring of samples
    votes: no, yes, yes counts yes), not the mean of the samples' hard labels; a field some
    sample reported keeps the mean (probability scoring). With none reported, the stage's
    ``probsSource`` is ``hard``: the majority's label counted, not the samples' shares."""
    reported = {name for part in parts for name in (part.record.answer_probs or {})}
    hard, _ = with_hard_labels(answer, None, schema.labels)
    for name in schema.labels:
        if name not in reported and name in hard:
            work.used_probs[name] = hard[name]
            if not reported:
                work.record.probs_source = "hard"


def _source(reported: bool, sources: list[str | None], *, sampled: bool) -> str | None:
    """Where a stage's label probabilities came from (`PromptStageRecord.probs_source`): the
    judge's ``logprobs`` when any call reported them; ``sampled`` when a question's samples were
    counted (the share giving each label); else ``hard``; None when no call asked for them."""
    known = [s for s in sources if s]
    if not known:
        return None
    if reported or "logprobs" in known:
        return "logprobs"
    return "sampled" if sampled or "sampled" in known else "hard"


def _gather_probs(work: StageWork, parts: list[StageWork], *, each: bool) -> None:
    """A stage's label probabilities from its calls' `parts`: with ``for_each`` (`each`) a list,
    one per element; for a sampled question the mean over its samples. Fields counted by their
    hard label are summed per field."""
    record = work.record
    answered = [part for part in parts if part.answers]
    if each:
        reported = [part.record.answer_probs for part in parts]
        record.answer_probs = reported if any(p is not None for p in reported) else None
        work.used_probs = [part.used_probs for part in parts]
    else:
        record.answer_probs = mean_probs([p.record.answer_probs for p in answered if p.record.answer_probs]) or None
        work.used_probs = mean_probs([p.used_probs for p in answered])
    work.answers = sum(part.answers for part in answered)
    record.probs_source = _source(record.answer_probs is not None, [p.record.probs_source for p in parts],
                                  sampled=not each and len(answered) > 1)
    work.hard_labels = {}
    for part in answered:
        for name, n in part.hard_labels.items():
            work.hard_labels[name] = work.hard_labels.get(name, 0) + n
