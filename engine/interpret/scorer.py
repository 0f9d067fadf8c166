"""The interpreter: runs a compiled spec's stages on one item and returns a `ScoreResult`.

The pipeline generalises the seed's preprocess → analyze → score → reason to any named
stages: ``vars`` → stages in order (a prompt stage asks the judge, a rule stage calls a
registered function; ``when`` false skips it) → not-scorable rule → ``let`` → formula
(rounded, range-checked) → the first matching reason case.

The interpreter is one generator that yields `JudgeCall`s and receives `JudgeAnswer`s, so the
same code runs under asyncio (`arun`) and, for specs without judge stages, synchronously
(`run` starts no event loop).
"""

from __future__ import annotations

import copy
import json
import math
import threading
from collections.abc import Generator, Mapping
from decimal import ROUND_HALF_UP, Decimal
from typing import Any

from ..core.answer_probs import label_fields, mean_probs, with_hard_labels
from ..core.errors import ScorerRunError, did_you_mean
from ..core.messages import MessageError
from ..core.result import ItemError, NotScorableInfo, ScoreResult, StageRecord, Usage
from ..core.run_fields import empty_reason, run_namespace
from ..core.sync import run_sync
from ..judge.call import Judge, JudgeAnswer, JudgeCall
from ..judge.contract import AnswerContract, normalize_answer
from ..judge.model import check_model, resolve_model
from ..spec.expressions import prepare
from ..spec.plans import PromptStagePlan, RuleStagePlan, ScorerPlan
from ..spec.sampling import with_samples
from .declared_fields import FieldValueError, missing_reason
from .declared_fields import resolve as resolve_declared
from .fan_out import FanOut, drive_part, drive_sync, parallel_calls
from .fan_out import drive as drive_fan_out
from .reduce import Reduced, agreeing_share, reduce_samples

SCALE_TOLERANCE = 1e-9


def round_half_away(value: float, places: int) -> float:
    """Round half away from zero on the number's shortest decimal form (``repr``), as the
    reference implementation does: 0.575 → 0.58, 0.125 → 0.13, -0.125 → -0.13 (case C13;
    Python's `round` gives 0.57 and 0.12 because it rounds the binary value half to even)."""
    quantum = Decimal(1).scaleb(-places)
    return float(Decimal(repr(value)).quantize(quantum, rounding=ROUND_HALF_UP))


_JSON_SCALARS = frozenset({bool, int, float, str})


def _json_problem(value: Any, path: str = "") -> str | None:
    """Where `value` stops being JSON data (null, booleans, numbers, text, lists, objects with
    text keys), as ``"<type> at <path>"``; None when it is JSON data throughout."""
    if value is None or isinstance(value, (bool, int, float, str)):
        return None
    if isinstance(value, (list, tuple)):
        for i, item in enumerate(value):
            if item is None or type(item) in _JSON_SCALARS:  # most items: no path built for them
                continue
            found = _json_problem(item, f"{path}[{i}]")
            if found:
                return found
        return None
    if isinstance(value, dict):
        for key, item in value.items():
            if not isinstance(key, str):
                return f"a {type(key).__name__} key at {path or 'the top'}"
            if item is None or type(item) in _JSON_SCALARS:
                continue
            found = _json_problem(item, f"{path}.{key}" if path else key)
            if found:
                return found
        return None
    return f"a {type(value).__name__} at {path or 'the top'}"


def _require_json(value: Any, stage: str) -> None:
    """Raise `ScorerRunError` (kind ``expression``) when a stage's result is not JSON data: it
    is written to results, so one such value would otherwise stop a whole eval at writing."""
    problem = _json_problem(value)
    if problem:
        raise ScorerRunError("expression", f"{stage}: the stage's result is not JSON data ({problem}); make it "
                             "numbers, texts, lists and objects (a dict method such as answer.items is not a key: "
                             "write answer['items'])", stage=stage)


def _judge_unusable(exc: Exception, stage: str) -> ScorerRunError:
    """The item's failure when its judge could not be built or called: kind ``auth`` when the
    provider's client was given no credentials (e.g. no ``OPENAI_API_KEY``), else ``judge``."""
    text = f"{type(exc).__name__}: {exc}"
    if "api_key" in str(exc) or "credentials" in str(exc).lower():
        return ScorerRunError("auth", f"{text} (set the provider's API key variable, e.g. OPENAI_API_KEY, or pass "
                              "api_key=; for a local OpenAI-compatible server give base_url=)", stage=stage)
    return ScorerRunError("judge", text, stage=stage)


def _default_judge(model: str) -> Judge:
    from ..bind.stack import make_judge

    return make_judge(model)


class _RenderStop(Exception):
    """`Scorer.render` reached a stage whose answer it was not given."""


class OptionError(ValueError):
    """An option a caller gave is unknown or fails its schema; the message names it."""


class Scorer:
    """A scorer plan bound to options and a judge.

    Build one with `load_scorer`. `run(...)` / `await arun(...)` score one item and return a
    `ScoreResult` (scored, not scorable, or failed — never raising for a failed item). Scores
    are in [0, scale]. `label`: the scorer's name in a batch run (default its id), which keys
    its results there, so one run can hold two versions of a scorer under two labels. `samples`:
    ask every prompt stage that can be sampled this many times (`engine.spec.sampling.with_samples`;
    None: as the spec says); `unsampled` lists the stages it left as they are. Raises
    `OptionError` for a bad option, `ValueError` for a bad label (see `check_label`) or samples,
    and `engine.judge.model.ModelError` when the spec uses a judge, none is given, and the model
    string cannot work here.
    """

    def __init__(self, plan: ScorerPlan, *, judge: Judge | None = None, model: str | None = None,
                 options: Mapping[str, Any] | None = None, judge_factory: Any = None, label: str | None = None,
                 samples: int | None = None):
        self.plan, self.unsampled = with_samples(plan, samples)
        self.id = plan.id
        self.label = plan.id if label is None else check_label(label)
        self.options = self._merge_options(options or {})
        self.model = resolve_model(model, plan.model) if plan.uses_judge else None
        if judge is not None:
            self.model = getattr(judge, "model", self.model)
        elif self.model is not None:
            check_model(self.model)  # a model that cannot work fails here, not on every item
        self._judge = judge
        self._judge_factory = judge_factory or _default_judge
        self._judge_lock = threading.Lock()

    # -- options -------------------------------------------------------------------------

    def _merge_options(self, given: Mapping[str, Any]) -> dict[str, Any]:
        validators = self.plan.options.validators
        merged = dict(self.plan.options.defaults)
        for name, value in given.items():
            validator = validators.get(name)
            if validator is None:
                hint = did_you_mean(name, validators)
                raise OptionError(f"{self.id}: unknown option {name!r}" + (f" ({hint})" if hint else ""))
            error = validator.error(value)
            if error is not None:
                raise OptionError(f"{self.id}: option {name!r}: {error}")
            merged[name] = value
        return merged

    @property
    def judge(self) -> Judge:
        """The judge, built on first use (so rule-only scorers never need a model). Raises what
        building it raises (e.g. `engine.embedded.llama.LocalJudgeError` for a missing model file)."""
        if self._judge is None:
            with self._judge_lock:
                if self._judge is None:
                    self._judge = self._judge_factory(self.model)
        return self._judge

    def with_judge(self, judge: Judge) -> "Scorer":
        """This scorer (same spec, options and model) asking `judge` instead; this one is
        unchanged. E.g. its own judge under one more layer:
        ``scorer.with_judge(engine.bind.stack.with_rate_limit(scorer.judge, limiter))``."""
        twin = copy.copy(self)
        twin._judge = judge
        twin._judge_lock = threading.Lock()
        return twin

    def with_samples(self, samples: int | None) -> "Scorer":
        """This scorer asking every prompt stage that can be sampled `samples` times (see
        `Scorer`); this one is unchanged. Raises `ValueError` for samples outside 1..50."""
        twin = copy.copy(self)
        twin.plan, twin.unsampled = with_samples(self.plan, samples)
        return twin

    def with_label(self, label: str) -> "Scorer":
        """This scorer (same spec, options and judge) under another label; this one is unchanged.
        Raises `ValueError` for a bad label."""
        twin = copy.copy(self)
        twin.label = check_label(label)
        return twin

    @property
    def scale(self) -> float:
        """The score's upper bound for these options (scores lie in [0, scale])."""
        return float(self.plan.score.scale({"options": self.options, "run": {}}))

    # -- running ---------------------------------------------------------------------------

    def run(self, output: Any = None, input: Any = None, ground_truth: Any = None, context: Any = None,
            *, system: Any = None, tool_calls: Any = None, run_id: str | None = None, **fields: Any) -> ScoreResult:
        """Score one item synchronously. Rule-only scorers start no event loop; others run
        `arun` on a private loop (in a worker thread when called from inside a running loop).

        output / input: a text or a list of chat messages; ground_truth: a text; context: a
        text or a list of passages; system: the system prompt; tool_calls: the calls made,
        ``[{name, arguments, result?, error?}]`` (see `engine.core.run_fields`); `fields`: the fields
        the spec declares, by name. Raises `TypeError` for a keyword that is none of these."""
        gen = self._interpret(self._item(output, input, ground_truth, context, system, tool_calls, fields), run_id)
        if not self.plan.uses_judge:
            try:
                next(gen)
            except StopIteration as stop:
                return stop.value
            raise RuntimeError("a rule-only scorer asked the judge")  # pragma: no cover
        return run_sync(self._drive_and_close(gen), thread_name=f"scorespec-{self.id}")

    async def arun(self, output: Any = None, input: Any = None, ground_truth: Any = None, context: Any = None,
                   *, system: Any = None, tool_calls: Any = None, run_id: str | None = None,
                   **fields: Any) -> ScoreResult:
        """Score one item; see `run`."""
        item = self._item(output, input, ground_truth, context, system, tool_calls, fields)
        return await self._drive(self._interpret(item, run_id))

    def _item(self, output: Any, input: Any, ground_truth: Any, context: Any, system: Any, tool_calls: Any,
              fields: Mapping[str, Any]) -> dict[str, Any]:
        """The item's fields by name; `TypeError` for a field the spec does not declare."""
        unknown = [name for name in fields if name not in self.plan.declared]
        if unknown:
            declared = ", ".join(self.plan.declared) or "none"
            hint = did_you_mean(unknown[0], list(self.plan.declared) + ["run_id", "system", "tool_calls"])
            raise TypeError(f"{self.id}: unknown field {unknown[0]!r} (the fields it declares: {declared})"
                            + (f"; {hint}" if hint.startswith("did you mean") else ""))
        return {"output": output, "input": input, "ground_truth": ground_truth, "context": context, "system": system,
                "tool_calls": tool_calls, **fields}

    async def aclose(self) -> None:
        """Release the judge's resources bound to the running event loop (HTTP connections)."""
        close = getattr(self._judge, "aclose", None)
        if close is not None:
            await close()

    async def _drive_and_close(self, gen: Generator[JudgeCall | FanOut, Any, ScoreResult]) -> ScoreResult:
        try:
            return await self._drive(gen)
        finally:
            await self.aclose()

    async def _drive(self, gen: Generator[JudgeCall | FanOut, Any, ScoreResult]) -> ScoreResult:
        async def ask(request: JudgeCall | FanOut) -> Any:
            if isinstance(request, FanOut):  # its elements' outcomes, failures included: never raises
                limit, lead_alone = parallel_calls(self.judge)
                return await drive_fan_out(request, self._ask_judge, limit, lead_alone)
            return await self._ask_judge(request)

        return await drive_part(gen, ask)

    async def _ask_judge(self, call: JudgeCall) -> JudgeAnswer:
        """The judge's answer to `call`; raises `ScorerRunError`, also for a judge that could not
        even be built or called."""
        try:
            return await self.judge.ask(call)
        except ScorerRunError:
            raise
        except Exception as exc:
            raise _judge_unusable(exc, call.stage) from None

    def render(self, output: Any = None, input: Any = None, ground_truth: Any = None, context: Any = None,
               answers: Mapping[str, Any] | None = None, *, system: Any = None, tool_calls: Any = None,
               **fields: Any) -> list[tuple[str, str]]:
        """The prompts that would be sent, as (stage id, text) pairs, without calling a model.
        The item's fields are `run`'s. `answers` gives a judge answer per stage id so later
        stages can be rendered; rendering stops at the first stage whose answer is needed and not
        given. Raises `ValueError` when the item fails before its first prompt (a missing or empty
        required field, messages that cannot be read: the item's error message)."""
        answers = dict(answers or {})
        shown: list[tuple[str, str]] = []

        def answer(call: JudgeCall) -> JudgeAnswer:
            if not call.sample_index:  # another sample of the question just shown: the same prompt
                shown.append((call.stage, "\n\n".join(f"[{m['role']}]\n{m['content']}" for m in call.messages)))
                if call.stage not in answers:
                    raise _RenderStop
            return JudgeAnswer(call.validate(answers[call.stage]), "", 0)

        gen = self._interpret(self._item(output, input, ground_truth, context, system, tool_calls, fields), None)
        try:
            result = drive_sync(gen, answer)
        except _RenderStop:
            gen.close()
            return shown
        error = result.error
        if error is not None and not shown and error.kind == "input":
            raise ValueError(error.message) from None
        return shown

    # -- the interpreter -----------------------------------------------------------------------

    def _interpret(self, item: Mapping[str, Any],
                   run_id: str | None) -> Generator[JudgeCall | FanOut, Any, ScoreResult]:
        plan = self.plan
        result = ScoreResult(scorer=plan.id, label=self.label, spec_version=plan.version, spec_hash=plan.hash,
                             spec_chain=list(plan.chain), model=self.model)
        if run_id:
            result.run_id = run_id
        stage_id: str | None = None
        try:
            probs: dict[str, Any] = {}  # `answer_probs`: by stage id
            ns: dict[str, Any] = prepare({"run": self._run_fields(item), "options": self.options,
                                          "answer_probs": probs})
            for name, expression in plan.vars:
                ns[name] = self._eval(expression, ns, f"vars.{name}")
            for stage in plan.stages:
                stage_id = stage.id
                record = StageRecord(kind="rule" if isinstance(stage, RuleStagePlan) else "prompt")
                result.stages[stage.id] = record
                labelled = isinstance(stage, PromptStagePlan) and stage.probabilities is not False
                if labelled and not self._wants_probs(stage, ns):
                    result.scoring = "hard"  # this run counts the hard labels
                if stage.when is not None and not self._eval(stage.when, ns, f"{stage.id}.when"):
                    record.skipped = True
                    ns[stage.id] = None
                    if labelled:
                        probs[stage.id] = None
                    continue
                if isinstance(stage, RuleStagePlan):
                    record.result = self._rule_stage(stage, ns)
                else:
                    record.result = yield from self._prompt_stage(stage, ns, record)
                if isinstance(stage, RuleStagePlan) or stage.result is not None:
                    _require_json(record.result, stage.id)
                ns[stage.id] = record.result
                if labelled:
                    probs[stage.id] = record._used_probs
                    self._note_hard_labels(stage.id, record, result)
            if any(isinstance(s, PromptStagePlan) and s.probabilities is not False for s in plan.stages):
                result.scoring = result.scoring or "probability"
            stage_id = None
            self._mirror_seed_fields(result)
            score = plan.score
            if score.not_scorable is not None and self._eval(score.not_scorable[0], ns, "score.not_scorable.when"):
                why = self._render(score.not_scorable[1], ns, "score.not_scorable.reason")
                result.not_scorable = NotScorableInfo(reason=why)
                result.reason = why
                return result
            for name, expression in score.let:
                ns[name] = self._eval(expression, ns, f"score.let.{name}")
            result.score = self._score(ns)
            ns["score"] = result.score
            ns["scale"] = self._scale(ns)
            stage_id = "reason"
            result.reason = yield from self._reason(ns, result)
        except ScorerRunError as exc:
            result.score = None
            result.error = ItemError(stage=exc.stage or stage_id, kind=exc.kind, message=exc.message,
                                     raw_answer=exc.raw_answer, attempts=exc.attempts)
            self._mirror_seed_fields(result)
        finally:
            for record in result.stages.values():
                result.usage.add(record.usage)
            agreements = [record.agreement for record in result.stages.values() if record.agreement is not None]
            result.agreement = min(agreements) if agreements else None
        return result

    def _wants_probs(self, stage: PromptStagePlan, ns: dict[str, Any]) -> bool:
        """Whether `stage` asks the judge for label probabilities on this item (its `probabilities`)."""
        if isinstance(stage.probabilities, bool):
            return stage.probabilities
        return bool(self._eval(stage.probabilities, ns, f"{stage.id}.probabilities"))

    @staticmethod
    def _note_hard_labels(stage_id: str, record: StageRecord, result: ScoreResult) -> None:
        """A warning in `result` (and scoring ``hard``) when answers of the stage that asked for
        label probabilities got none: they count by their hard labels, never silently."""
        if not record._hard_labels:
            return
        result.scoring = "hard"
        fields = ", ".join(f"'{name}' in {n} of {record._answers} answer(s)" for name, n in record._hard_labels.items())
        result.warnings = (result.warnings or []) + [
            f"{stage_id}: the judge reported no label probabilities for {fields}; those count by their hard "
            "label (judges that report them: the embedded models, and OpenAI-compatible servers with logprobs)"]

    def _run_fields(self, item: Mapping[str, Any]) -> dict[str, Any]:
        """`run` for the item (`engine.core.run_fields`), its declared fields resolved; raises
        `ScorerRunError` (kind ``input``) for messages, tool calls or a declared field that cannot
        be read, and for a required field that is missing or empty (`_check_required`)."""
        try:
            declared = resolve_declared(self.plan.declared, item, self.options)
            run = run_namespace(item, declared.values, declared.given)
            self._check_required(run)
        except (MessageError, FieldValueError) as exc:
            raise ScorerRunError("input", f"{self.id}: {exc}") from None
        return run

    def _check_required(self, run: Mapping[str, Any]) -> None:
        """Raise `ScorerRunError` (kind ``input``) for a required field the item does not give,
        and for a required field given empty unless the system produced it (case C24: an input
        with no text fails, an empty output is judged; `engine.core.run_fields.empty_reason`). A
        declared field is required to have a value, from the item or its option."""
        for name, required in self.plan.required.items():
            needed = required if isinstance(required, bool) else bool(
                self._eval(required, {"options": self.options}, f"fields.{name}.required"))
            if not needed:
                continue
            field = self.plan.declared.get(name)
            if field is not None:
                why = missing_reason(field) if run[name] is None else None
            else:
                why = empty_reason(name, run)
            if why is not None:
                hint = " (set requireGroundTruth=false to score it 0)" if name == "ground_truth" \
                    and "requireGroundTruth" in self.options else ""
                raise ScorerRunError("input", f"{self.id} needs '{name}' and {why}{hint}")

    def _rule_stage(self, stage: RuleStagePlan, ns: dict[str, Any]) -> Any:
        args = {name: self._eval(expression, ns, f"{stage.id}.args.{name}") for name, expression in stage.args.items()}
        try:
            return stage.function(**args)
        except Exception as exc:
            raise ScorerRunError("function", f"{stage.function_name} raised {type(exc).__name__}: {exc}",
                                 stage=stage.id) from None

    def _reason(self, ns: dict[str, Any], result: ScoreResult):
        """The first reason case whose `when` holds, rendered or asked of the judge; None
        when no case applies."""
        for case in self.plan.reasons:
            if case.when is not None and not self._eval(case.when, ns, "reason.when"):
                continue
            if case.template is not None:
                return self._render(case.template, ns, "reason.template").strip()
            assert case.prompt is not None
            record = StageRecord(kind="prompt")
            result.stages["reason"] = record
            answer = yield from self._ask(case.prompt, case.prompt.schema, ns, record)
            record.result = answer["reason"].strip()
            result.generate_reason_prompt = record.prompt
            return record.result
        return None

    def _prompt_stage(self, stage: PromptStagePlan, ns: dict[str, Any], record: StageRecord):
        if stage.for_each is not None:
            return (yield from self._prompt_stage_each(stage, ns, record))
        answer = yield from self._ask_sampled(stage, stage.schema_for(ns), ns, record)
        if stage.result is None:
            return answer
        return self._eval(stage.result, {**ns, "answer": answer}, f"{stage.id}.result")

    def _prompt_stage_each(self, stage: PromptStagePlan, ns: dict[str, Any], record: StageRecord):
        """A `for_each` stage: one judge call per element, in order; the record sums the calls'
        usage and attempts and joins their prompts and raw answers (element by element)."""
        assert stage.for_each is not None
        elements = self._eval(stage.for_each, ns, f"{stage.id}.for_each")
        if isinstance(elements, (str, bytes)) or not isinstance(elements, (list, tuple)):
            raise ScorerRunError("expression", f"{stage.id}.for_each: {stage.for_each.source!r} gave "
                                 f"{type(elements).__name__}, expected a list", stage=stage.id)
        parts = [StageRecord(kind="prompt") for _ in elements]
        scopes = [{**ns, "each": element, "each_index": index} for index, element in enumerate(elements)]
        outcomes = (yield FanOut([self._ask_element(stage, scope, part) for scope, part in zip(scopes, parts)])) \
            if elements else []
        prompts, raws, answers = [], [], []
        failure: ScorerRunError | None = None
        try:
            for index, (part, outcome) in enumerate(zip(parts, outcomes)):
                if not outcome.started:
                    break
                prompts.append(part.prompt or "")
                # a sampled element's raw answers are a list: kept as one, not as its JSON text
                raws.append(json.loads(part.raw_answer) if stage.samples > 1 and part.raw_answer
                            else part.raw_answer or "")
                record.attempts += part.attempts
                record.usage.add(part.usage)
                if outcome.error is not None and failure is None:
                    failure = outcome.error
                    failure.message = f"element {index}: {failure.message}"
                answers.append(outcome.value)
            if failure is not None:
                raise failure
            results = [answer if stage.result is None
                       else self._eval(stage.result, {**scope, "answer": answer}, f"{stage.id}.result")
                       for scope, answer in zip(scopes, answers)]
        finally:
            record.prompt = "\n\n".join(f"[{i}]\n{p}" for i, p in enumerate(prompts)) if prompts else None
            record.raw_answer = json.dumps(raws, ensure_ascii=False) if raws else None
            if stage.samples > 1:
                _gather_samples(record, parts[:len(prompts)])
        if stage.probabilities is not False:
            _gather_probs(record, parts, each=True)
        return results

    def _ask_element(self, stage: PromptStagePlan, scope: dict[str, Any], part: StageRecord):
        """One element of a `for_each` stage: its question (sampled or not), recorded in `part`."""
        return (yield from self._ask_sampled(stage, stage.schema_for(scope), scope, part))

    def _ask_sampled(self, stage: PromptStagePlan, schema: dict[str, Any], ns: dict[str, Any], record: StageRecord):
        """One question of `stage`: asked once, or `stage.samples` times and reduced
        (`engine.interpret.reduce`), every sample's answer, the agreement and the spread in `record`. A
        sample that fails fails the question (message prefixed ``sample i: ``)."""
        sampling = stage.sampling
        if sampling is None or sampling.n == 1:
            answer = yield from self._ask(stage, schema, ns, record)
            if sampling is None or sampling.method != "expression":
                return answer
            return self._reduce(stage, [answer], schema, ns).answer  # the answer is what the expression gives
        samples, raws, parts = [], [], []
        try:
            for index in range(sampling.n):
                part = StageRecord(kind="prompt")
                parts.append(part)
                try:
                    samples.append((yield from self._ask(stage, schema, ns, part, sample_index=index)))
                except ScorerRunError as exc:
                    exc.message = f"sample {index}: {exc.message}"
                    raise
                finally:
                    record.prompt = part.prompt
                    raws.append(part.raw_answer or "")
                    record.attempts += part.attempts
                    record.usage.add(part.usage)
        finally:
            record.raw_answer = json.dumps(raws, ensure_ascii=False) if raws else None
            record.samples = samples
        reduced = self._reduce(stage, samples, schema, ns)
        record.agreement, record.spread = reduced.agreement, reduced.spread
        if stage.probabilities is not False:
            _gather_probs(record, parts, each=False)
        return reduced.answer

    def _reduce(self, stage: PromptStagePlan, samples: list[Any], schema: dict[str, Any],
                ns: dict[str, Any]) -> Reduced:
        sampling = stage.sampling
        assert sampling is not None
        if sampling.method != "expression":
            return reduce_samples(sampling, samples, schema)
        value = self._eval(sampling.expression, {**ns, "samples": samples}, f"{stage.id}.reduce")
        _require_json(value, stage.id)
        return Reduced(value, agreeing_share(samples, value))

    def _ask(self, stage: PromptStagePlan, schema: dict[str, Any], ns: dict[str, Any], record: StageRecord,
             sample_index: int | None = None):
        """One judge call for `stage` (sample `sample_index` of a sampled question, at the sampling
        temperature; None: the stage asked once); its prompt, raw answer, attempts and usage in
        `record`."""
        stage_id, checks = stage.id, [(check.expect, check.message) for check in stage.checks]
        prompt = self._render(stage.template, ns, f"{stage_id}.prompt")
        record.prompt = prompt
        messages = []
        if self.plan.instructions is not None:
            messages.append({"role": "system", "content": self._render(self.plan.instructions, ns, "judge.instructions")})
        messages.append({"role": "user", "content": prompt})
        contract = AnswerContract(schema, tuple(checks), ns)
        temperature = stage.temperature
        if sample_index is not None and stage.sampling is not None:
            temperature = stage.sampling.temperature
        asked = stage.probabilities is not False and self._wants_probs(stage, ns)
        call = JudgeCall(stage_id, messages, contract, stage.max_reasks, temperature, stage.max_tokens,
                         sample_index or 0, probabilities=asked)
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
        if stage.probabilities is not False:  # what `answer_probs` holds: reported, else the hard labels
            reported = reply.answer_probs if asked else None
            record.answer_probs = reported
            record._used_probs, filled = with_hard_labels(reply.data, reported, label_fields(schema))
            record._hard_labels = {name: 1 for name in filled} if asked else {}
            record._answers = 1
        return reply.data

    # -- helpers ----------------------------------------------------------------------------

    def _eval(self, expression: Any, ns: dict[str, Any], where: str) -> Any:
        try:
            return expression(ns)
        except ScorerRunError:
            raise
        except Exception as exc:
            raise ScorerRunError("expression", f"{where}: {expression.source!r} raised {type(exc).__name__}: {exc}",
                                 stage=where.split(".")[0] if where.split(".")[0] in ns else None) from None

    def _render(self, template: Any, ns: dict[str, Any], where: str) -> str:
        try:
            return template.render(ns)
        except Exception as exc:
            raise ScorerRunError("expression", f"{where}: rendering failed: {type(exc).__name__}: {exc}") from None

    def _scale(self, ns: dict[str, Any]) -> float:
        scale = self._eval(self.plan.score.scale, ns, "score.scale")
        if isinstance(scale, bool) or not isinstance(scale, (int, float)) or not math.isfinite(scale) or scale <= 0:
            raise ScorerRunError("formula", f"score.scale {self.plan.score.scale.source!r} gave {scale!r}, "
                                 "not a positive finite number")
        return float(scale)

    def _score(self, ns: dict[str, Any]) -> float:
        formula = self.plan.score.formula
        value = self._eval(formula, ns, "score.formula")
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ScorerRunError("formula", f"score.formula {formula.source!r} gave {value!r}, not a number")
        value = float(value)
        scale = self._scale(ns)
        if not math.isfinite(value) or value < -SCALE_TOLERANCE or value > scale + SCALE_TOLERANCE:
            raise ScorerRunError("formula", f"score.formula {formula.source!r} gave {value!r}, outside [0, {scale:g}]")
        value = min(max(value, 0.0), scale)
        places = self.plan.score.round
        return round_half_away(value, places) if places is not None else value

    @staticmethod
    def _mirror_seed_fields(result: ScoreResult) -> None:
        for name in ("preprocess", "analyze"):
            record = result.stages.get(name)
            if record is not None:
                setattr(result, f"{name}_step_result", record.result)
                setattr(result, f"{name}_prompt", record.prompt)


def _gather_samples(record: StageRecord, parts: list[StageRecord]) -> None:
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


def _gather_probs(record: StageRecord, parts: list[StageRecord], *, each: bool) -> None:
    """A stage's label probabilities from its calls' `parts`: with ``for_each`` (`each`) a list,
    one per element; for a sampled question the mean over its samples. Fields counted by their
    hard label are summed per field."""
    answered = [part for part in parts if part._answers]
    if each:
        reported = [part.answer_probs for part in parts]
        record.answer_probs = reported if any(p is not None for p in reported) else None
        record._used_probs = [part._used_probs for part in parts]
    else:
        record.answer_probs = mean_probs([p.answer_probs for p in answered if p.answer_probs]) or None
        record._used_probs = mean_probs([p._used_probs for p in answered])
    record._answers = sum(part._answers for part in answered)
    record._hard_labels = {}
    for part in answered:
        for name, n in part._hard_labels.items():
            record._hard_labels[name] = record._hard_labels.get(name, 0) + n


def check_label(label: Any) -> str:
    """`label` when it can name a scorer in a run: a non-empty string without ``=`` (which
    ``--threshold LABEL=min`` splits on) and without surrounding spaces; else `ValueError`."""
    if not isinstance(label, str) or not label.strip() or label != label.strip() or "=" in label:
        raise ValueError(f"scorer label {label!r}: give a non-empty name without '=' or surrounding spaces")
    return label


__all__ = ["Scorer", "check_label", "round_half_away", "normalize_answer",
           "OptionError"]
