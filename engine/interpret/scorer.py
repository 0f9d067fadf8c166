"""A scorer: a compiled spec bound to its options and its judge, scoring one item at a time.

`Scorer.run` / `arun` score an item and return a `ScoreResult`; `render` shows the prompts
that would be sent. The stages run in `engine.interpret.interpreter` (one generator that yields
`JudgeCall`s and receives `JudgeAnswer`s), so the same code runs under asyncio (`arun`) and, for
specs without judge stages, synchronously (`run` starts no event loop).
"""

from __future__ import annotations

import copy
import threading
from collections.abc import Generator, Mapping
from typing import Any

from ..core.errors import ScorerRunError, UserError, did_you_mean
from ..core.language import AUTO, check_language
from ..core.result import ScoreResult
from ..core.run_fields import LOOKED_FOR, PAIR_FIELDS, RUN_FIELDS
from ..core.sync import run_sync
from ..judge.call import Judge, JudgeAnswer, JudgeCall, MissingCredentials
from ..judge.model import resolve_model
from ..judge.stack import GivenJudge, JudgeParts
from ..spec.field_reads import reads_language
from ..spec.judge_overrides import split_judge_options, with_judge_options
from ..spec.plans import ScorerPlan
from ..spec.sampling import with_samples
from .fan_out import FanOut, drive_part, drive_sync, parallel_calls
from .fan_out import drive as drive_fan_out
from .interpreter import Interpreter


def _judge_unusable(exc: Exception, stage: str) -> ScorerRunError:
    """The item's failure when its judge could not be built or called: kind ``auth`` when the
    provider's client was given no credentials (`engine.judge.call.MissingCredentials`, e.g. no
    ``OPENAI_API_KEY``), else ``judge``."""
    if isinstance(exc, MissingCredentials):  # its text names the client's own error
        return ScorerRunError("auth", f"{exc} (set the provider's API key variable, e.g. OPENAI_API_KEY, or pass "
                              "api_key= in Python; for a local OpenAI-compatible server give --base-url, or "
                              "base_url= in Python)", stage=stage)
    return ScorerRunError("judge", f"{type(exc).__name__}: {exc}", stage=stage)


def _no_judge(model: str, parts: JudgeParts | None = None) -> Judge:
    """The judge factory of a scorer built without a judge or a factory: none can be built here."""
    raise LookupError(f"no judge is bound to this scorer (model {model!r}): load it with engine.load_scorer or "
                      "engine.bind.stack.bind, which give a scorer its judge")


class _RenderStop(Exception):
    """`Scorer.render` reached a stage whose answer it was not given."""


class OptionError(UserError, ValueError):
    """An option a caller gave is unknown or fails its schema; the message names it."""


class Scorer:
    """A scorer plan bound to options and a judge.

    Build one with `load_scorer`. `run(...)` / `await arun(...)` score one item and return a
    `ScoreResult` (scored, not scorable, or failed — never raising for a failed item). Scores
    are in [0, scale]. `label`: the scorer's name in a batch run (default its id), which keys
    its results there, so one run can hold two versions of a scorer under two labels. `samples`:
    ask every prompt stage that can be sampled this many times (`engine.spec.sampling.with_samples`;
    None: as the spec says); `unsampled` lists the stages it left as they are. Raises
    `OptionError` for a bad option, `ValueError` for a bad label (see `check_label`) or samples.
    `model`: the judge model (None: `engine.judge.model.resolve_model`); it is checked where the
    scorer is bound (`engine.bind.stack.bind`), not here. `judge_factory`: ``factory(model,
    parts)`` → judge, called on the judge's first use with the `engine.judge.stack.JudgeParts` a
    run added (`with_parts`; `engine.bind.stack.bind` gives one that builds the judge stack); a
    `judge` given without a factory is asked as it is, under those parts; without a judge or a
    factory there is no judge, and an item that needs one fails with kind ``judge``. `language`:
    the items' language, ``"auto"`` (default: detected per item) or an ISO 639-1 code in any case
    (`engine.core.language`; an item's own ``language`` wins); `LanguageError` (a `ValueError`)
    for another value.
    """

    def __init__(self, plan: ScorerPlan, *, judge: Judge | None = None, model: str | None = None,
                 options: Mapping[str, Any] | None = None, judge_factory: Any = None, label: str | None = None,
                 samples: int | None = None, language: str = AUTO):
        self.plan, self.unsampled = with_samples(plan, samples)
        self.language = check_language(language)
        self.reads_language = reads_language(plan)
        self.id = plan.id
        self.label = plan.id if label is None else check_label(label)
        given, judge_options = _judge_options(self.id, options or {})
        self.plan = with_judge_options(self.plan, judge_options)  # ``--option judge.reasoning_effort=…``
        self.options = self._merge_options(given)
        self.model = resolve_model(model, plan.model) if plan.uses_judge else None
        if judge is not None:
            self.model = getattr(judge, "model", self.model)
        self._judge = judge
        self._judge_factory = judge_factory or (GivenJudge(judge) if judge is not None else _no_judge)
        self._parts = JudgeParts()
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
                    self._judge = self._judge_factory(self.model, self._parts)
        return self._judge

    def with_judge(self, judge: Judge) -> "Scorer":
        """This scorer (same spec, options and model) asking `judge` instead, as it is (a run's
        parts go over it: `with_parts`); this one is unchanged."""
        twin = copy.copy(self)
        twin._judge = judge
        twin._judge_factory = GivenJudge(judge)
        twin._parts = JudgeParts()
        twin._judge_lock = threading.Lock()
        return twin

    def with_parts(self, parts: JudgeParts) -> "Scorer":
        """This scorer asking a judge its factory builds with `parts` laid over the ones it had
        (`engine.judge.stack.JudgeParts.over`: a run's rate limiter, cache, progress hook), on
        first use: the judge stack is composed once, with every part; this one is unchanged."""
        twin = copy.copy(self)
        twin._parts = parts.over(self._parts)
        twin._judge = None
        twin._judge_lock = threading.Lock()
        return twin

    def with_samples(self, samples: int | None) -> "Scorer":
        """This scorer asking every prompt stage that can be sampled `samples` times (see
        `Scorer`); this one is unchanged. Raises `ValueError` for samples outside 1..50."""
        twin = copy.copy(self)
        twin.plan, twin.unsampled = with_samples(self.plan, samples)
        return twin

    def with_language(self, language: str) -> "Scorer":
        """This scorer judging items in `language` (``"auto"`` or an ISO 639-1 code; an item's own
        ``language`` field still wins); this one is unchanged. Raises `LanguageError` (a
        `ValueError`) for another value."""
        twin = copy.copy(self)
        twin.language = check_language(language)
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

    @property
    def cutoff(self) -> float | None:
        """The spec's documented cut-off on this scorer's scale (`ScorerPlan.cutoff_at`), or None
        when the spec declares none."""
        if self.plan.cutoff is None:
            return None
        return self.plan.cutoff_at(self.scale)

    # -- running ---------------------------------------------------------------------------

    def run(self, output: Any = None, input: Any = None, ground_truth: Any = None, context: Any = None,
            *, system: Any = None, tool_calls: Any = None, language: str | None = None, run_id: str | None = None,
            **fields: Any) -> ScoreResult:
        """Score one item synchronously. Rule-only scorers start no event loop; others run
        `arun` on a private loop (in a worker thread when called from inside a running loop).

        output / input: a text or a list of chat messages; ground_truth: a text; context: a
        text or a list of passages; system: the system prompt; tool_calls: the calls made,
        ``[{name, arguments, result?, error?}]`` (see `engine.core.run_fields`); language: this item's
        language (an ISO 639-1 code, winning over the scorer's setting; a bad code fails the item
        with kind ``input``); `fields`: the fields the spec declares, by name, and a pair's two
        responses, ``output_a`` and ``output_b`` (for a pairwise spec: `engine.core.responses`).
        Raises `TypeError` for a keyword that is none of these."""
        gen = self._interpret(self._item(output, input, ground_truth, context, system, tool_calls, fields, language),
                              run_id)
        if not self.plan.uses_judge:
            try:
                next(gen)
            except StopIteration as stop:
                return stop.value
            raise RuntimeError("a rule-only scorer asked the judge")  # pragma: no cover
        return run_sync(self._drive_and_close(gen), thread_name=f"scorespec-{self.id}")

    async def arun(self, output: Any = None, input: Any = None, ground_truth: Any = None, context: Any = None,
                   *, system: Any = None, tool_calls: Any = None, language: str | None = None,
                   run_id: str | None = None, **fields: Any) -> ScoreResult:
        """Score one item; see `run`."""
        item = self._item(output, input, ground_truth, context, system, tool_calls, fields, language)
        return await self._drive(self._interpret(item, run_id))

    def _item(self, output: Any, input: Any, ground_truth: Any, context: Any, system: Any, tool_calls: Any,
              fields: Mapping[str, Any], language: Any = None) -> dict[str, Any]:
        """The item's fields by name; `TypeError` for a field the spec does not declare (but
        `engine.core.run_fields.LOOKED_FOR`: where a reader looked for the fields the item lacks)."""
        unknown = [name for name in fields if name not in self.plan.declared and name not in PAIR_FIELDS
                   and name != LOOKED_FOR]
        if unknown:
            run_fields = [*RUN_FIELDS, "language"]
            declared = ", ".join(self.plan.declared) or "none"
            hint = did_you_mean(unknown[0], list(self.plan.declared) + run_fields + ["run_id"])
            raise TypeError(f"{self.id}: unknown field {unknown[0]!r} (it takes the run fields {', '.join(run_fields)} "
                            f"and the fields it declares: {declared})"
                            + (f"; {hint}" if hint.startswith("did you mean") else ""))
        return {"output": output, "input": input, "ground_truth": ground_truth, "context": context, "system": system,
                "tool_calls": tool_calls, "language": language, **fields}

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
               language: str | None = None, **fields: Any) -> list[tuple[str, str]]:
        """The prompts that would be sent, as (stage id, text) pairs, without calling a model.
        The item's fields are `run`'s. `answers` gives a judge answer per stage id so later
        stages can be rendered; rendering stops at the first stage whose answer is needed and not
        given; a question a jury asks is shown once. Raises `ValueError` when the item fails before its first prompt (a missing or empty
        required field, messages that cannot be read: the item's error message)."""
        answers = dict(answers or {})
        shown: list[tuple[str, str]] = []

        def answer(call: JudgeCall) -> JudgeAnswer:
            if not call.sample_index:  # another sample of the question just shown: the same prompt
                text = "\n\n".join(f"[{m['role']}]\n{m['content']}" for m in call.messages)
                if call.model is None or not shown or shown[-1] != (call.stage, text):  # a jury's: shown once
                    shown.append((call.stage, text))
                if call.stage not in answers:
                    raise _RenderStop
            return JudgeAnswer(call.validate(answers[call.stage]), "", 0)

        gen = self._interpret(self._item(output, input, ground_truth, context, system, tool_calls, fields, language),
                              None)
        try:
            result = drive_sync(gen, answer)
        except _RenderStop:
            gen.close()
            return shown
        error = result.error
        if error is not None and not shown and error.kind == "input":
            raise ValueError(error.message) from None
        return shown

    def _interpret(self, item: Mapping[str, Any],
                   run_id: str | None) -> Generator[JudgeCall | FanOut, Any, ScoreResult]:
        """The interpreter's run of `item` (`engine.interpret.interpreter.Interpreter.run`)."""
        return Interpreter(self.plan, self.options, self.label, self.model, self.language,
                           self.reads_language).run(item, run_id)


def _judge_options(scorer_id: str, given: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """(the options of the spec, the judge options: `engine.spec.judge_overrides`); `OptionError`
    for a judge option with a bad value."""
    try:
        return split_judge_options(given)
    except ValueError as exc:
        raise OptionError(f"{scorer_id}: {exc}") from None


def check_label(label: Any) -> str:
    """`label` when it can name a scorer in a run: a non-empty string without ``=`` (which
    ``--threshold LABEL=min`` splits on) and without surrounding spaces; else `ValueError`."""
    if not isinstance(label, str) or not label.strip() or label != label.strip() or "=" in label:
        raise ValueError(f"scorer label {label!r}: give a non-empty name without '=' or surrounding spaces")
    return label


__all__ = ["Scorer", "check_label", "OptionError"]
