"""Typed plans: what `engine.spec.compile` emits and the interpreter runs.

A plan is complete when it is built (frozen, every default resolved, the hash known): nothing
at run time reads the spec as written. A stage is either a `PromptStagePlan` (the judge
answers) or a `RuleStagePlan` (a registered function computes); a judge-written reason is a
`PromptStagePlan` with id ``reason``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Union

from ..core.answer_schema import AnswerSchema
from ..core.direction import HIGHER_IS_BETTER, Direction
from ..core.schemas import OptionValidator
from .expressions import Expression, Template

REASON_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["reason"],
    "properties": {"reason": {"type": "string", "minLength": 1, "maxLength": 800}},
    "additionalProperties": False,
}
"""What a judge-written reason must be."""


@dataclass(frozen=True, slots=True)
class CheckPlan:
    """A condition on an answer (`expect`, over the stage's names and `answer`); while false
    the judge is re-asked with `message`."""

    expect: Expression
    message: str


@dataclass(frozen=True, slots=True)
class SamplingPlan:
    """How a stage's judge answers are sampled and reduced to one (`engine.interpret.reduce`).

    n: samples per question (1: asked once, as an unsampled stage). temperature: the
    temperature samples are drawn at when n > 1 (above 0). method: ``majority`` or ``unanimous``
    (over the answer's `fields` that vote: enum or boolean), ``mean`` / ``median`` / ``min`` /
    ``max`` (over its number `fields`) or ``expression`` (`expression` over ``samples`` gives the
    answer). tie: with majority, the value a tie goes to per voted field, in `fields` order (None:
    the earliest tied sample's); with unanimous, the value when the answers disagree.
    """

    n: int
    temperature: float
    method: str
    fields: tuple[str, ...] = ()
    tie: tuple[Any, ...] | None = None
    expression: Expression | None = None


@dataclass(frozen=True, slots=True)
class PairwisePlan:
    """A pairwise stage's plan (`engine.interpret.pairwise`): `order` is ``both`` (asked A first,
    then B first), ``random`` (once, the order drawn from the item's content) or ``fixed`` (once, A
    first); `field` is the answer's field naming the winning position (``A``, ``B`` or ``tie``)."""

    order: str = "both"
    field: str = "winner"


@dataclass(frozen=True, slots=True)
class JuryPlan:
    """A stage asked by a panel of models (`engine.interpret.jury`): `models`, two or more distinct
    model strings in order; `min_successful`, the fewest that must answer (1..len(models));
    `reduction`, how their answers become one (a `SamplingPlan` whose `n` is the number of jurors:
    ``majority``, ``unanimous``, ``mean``, ``median``, ``min``, ``max`` or ``expression``)."""

    models: tuple[str, ...]
    min_successful: int
    reduction: SamplingPlan


@dataclass(frozen=True, slots=True)
class PromptStagePlan:
    """A stage the judge answers.

    schema: the output schema (JSON Schema, type object); where it was written ``{$expr: …}``
    it holds a placeholder and `schema_exprs` gives (JSON pointer as a tuple, expression) to
    compute per item (`schema_for`). temperature and max_tokens are resolved (the stage's, else
    the judge block's); max_reasks bounds re-asks after an invalid answer or a failed check.
    for_each: an expression giving a list (one call per element), or None; collect: with it, an
    expression over ``results`` (the per-element results) giving the stage's result, or None (the
    list). sampling: how the
    stage is sampled (`SamplingPlan`; n = 1 when it is asked once), or None when its answer has
    nothing a default reduction can use and the spec gives no `reduce` (it is then always asked
    once, whatever a run's ``samples``). probabilities: whether to ask for the answer's label
    probabilities (`engine.core.answer_probs`): a constant, or an expression evaluated per item.
    answer: what is derived once from a schema known at load (`engine.core.answer_schema.AnswerSchema`:
    the validator, label fields, the schema's JSON text, the schema as sent titled with the stage
    id and its canonical JSON for cache keys); None when the schema
    has ``{$expr}`` values (`answer_for` then builds one per call). Made when the plan is built,
    its parts computed by the compiler once the spec has no problem (`AnswerSchema.prepare`).
    keep_first: the answer's list fields (top-level, type array with ``maxItems``) whose first
    ``maxItems`` items are kept when the judge lists more, instead of asking again
    (`engine.judge.contract.AnswerContract.kept`); how many it listed is ``listed.STAGE``.
    pages: the answer's list fields (top-level, type array with ``maxItems``) asked for page by
    page while a page comes back full (`engine.interpret.pages`); how many were listed in all is
    ``listed.STAGE``.
    examples: the stage's worked examples (mappings), which its prompt reads as ``examples``.
    reasoning_effort, reasoning_tokens, family: how a reasoning model is asked (the stage's, else the
    judge block's; `engine.judge.model_params`), None when not given.
    sampled_probabilities: with a judge that reports no label probabilities, how many answers in all
    a question asks for, their shares taken as the probabilities (`engine.interpret.prompt_stages`);
    None: the hard labels.
    pairwise: for a stage judging an item's two responses (`PairwisePlan`), None for any other.
    jury: the panel of models asking each question (`JuryPlan`), or None: the scorer's judge.
    """

    id: str
    template: Template
    schema: Mapping[str, Any]
    temperature: float
    max_tokens: int
    max_reasks: int
    when: Expression | None = None
    for_each: Expression | None = None
    collect: Expression | None = None
    schema_exprs: tuple[tuple[tuple[Any, ...], Expression], ...] = ()
    checks: tuple[CheckPlan, ...] = ()
    result: Expression | None = None
    sampling: SamplingPlan | None = None
    probabilities: Union[bool, Expression] = False
    keep_first: tuple[str, ...] = ()
    pages: tuple[str, ...] = ()
    answer: AnswerSchema | None = field(default=None, compare=False, repr=False)
    examples: tuple[Mapping[str, Any], ...] = ()
    reasoning_effort: str | None = None
    reasoning_tokens: int | None = None
    family: str | None = None
    sampled_probabilities: int | None = None
    pairwise: PairwisePlan | None = None
    jury: JuryPlan | None = None

    def __post_init__(self) -> None:
        if self.answer is None and not self.schema_exprs:
            object.__setattr__(self, "answer", AnswerSchema(self.schema, self.id))

    @property
    def samples(self) -> int:
        """How many times each question of the stage is asked (1 when it is not sampled)."""
        return self.sampling.n if self.sampling is not None else 1

    def answer_for(self, namespace: dict[str, Any]) -> AnswerSchema:
        """The compiled answer schema for one item (or element): the plan's own (`answer`) when
        the schema is known at load; else one built for this call from `schema_for(namespace)`,
        its parts derived on first use. Raises what a `$expr` value's expression raises."""
        if self.answer is not None:
            return self.answer
        return AnswerSchema(self.schema_for(namespace), self.id)

    def schema_for(self, namespace: dict[str, Any]) -> dict[str, Any]:
        """The output schema for one item (or element): `$expr` values computed over
        `namespace`; the shared schema itself when there are none (never mutate it)."""
        if not self.schema_exprs:
            return self.schema  # type: ignore[return-value]
        schema = dict(self.schema)
        for pointer, expression in self.schema_exprs:
            node: Any = schema
            for part in pointer[:-1]:  # copy only the containers on the way to each value
                child = node[part]
                node[part] = child = dict(child) if isinstance(child, dict) else list(child)
                node = child
            node[pointer[-1]] = expression(namespace)
        return schema


@dataclass(frozen=True, slots=True)
class RuleStagePlan:
    """A stage a registered rule function computes: ``function(**{name: expr(ns)})``."""

    id: str
    function: Callable[..., Any]
    function_name: str
    args: Mapping[str, Expression]
    when: Expression | None = None


StagePlan = Union[PromptStagePlan, RuleStagePlan]


ENGLISH = "en"
"""The language every engine-written reason is given in, and falls back to."""


@dataclass(frozen=True, slots=True)
class ReasonText:
    """An engine-written reason: its template per language (ISO 639-1 code → `Template`), English
    (``en``) always among them."""

    templates: Mapping[str, Template]

    def __post_init__(self) -> None:
        if ENGLISH not in self.templates:
            raise ValueError("a reason text needs its English template ('en')")

    @property
    def source(self) -> str:
        """The English template's source text."""
        return self.templates[ENGLISH].source

    @property
    def translated(self) -> bool:
        """Whether the reason is given in a language besides English."""
        return len(self.templates) > 1

    def for_language(self, code: str | None) -> tuple[str, Template]:
        """(the language written, its template) for an item in `code`: that language's template
        when given, else English's (also for None: a language not settled)."""
        if code is not None and code in self.templates:
            return code, self.templates[code]
        return ENGLISH, self.templates[ENGLISH]


@dataclass(frozen=True, slots=True)
class ReasonPlan:
    """One way to explain a score: a `template` rendered without the judge (per language:
    `ReasonText`), or a `prompt` stage whose answer is ``{reason: string}``. The first case
    whose `when` holds is used."""

    when: Expression | None
    template: ReasonText | None = None
    prompt: PromptStagePlan | None = None


@dataclass(frozen=True, slots=True)
class ScorePlan:
    """How the score is computed: the not-scorable rule (when, reason per language), the `let`
    names in order, the formula, the scale expression and the decimal places (None: as is)."""

    formula: Expression
    scale: Expression
    let: tuple[tuple[str, Expression], ...] = ()
    not_scorable: tuple[Expression, ReasonText] | None = None
    round: int | None = None


@dataclass(frozen=True, slots=True)
class SubScorePlan:
    """A named sub-score: its formula, scale and decimal places as a `ScorePlan` (the main score's
    scale), its direction (the spec's unless it gives its own), its documented cut-off on the
    default scale (None: none) and its description."""

    name: str
    score: ScorePlan
    direction: Direction = HIGHER_IS_BETTER
    cutoff: float | None = None
    description: str = ""


@dataclass(frozen=True, slots=True)
class LabelPlan:
    """A label result: the value of `field` in the result of the prompt stage `stage`. values: the
    allowed labels best first (a tuple; an expression over ``options``; or None: the stage's
    answer schema holds them, checked per call). scores: label → share of the scale in [0, 1], an
    expression over ``options`` giving that mapping, or None (the values' order: the first 1, the
    last 0)."""

    stage: str
    field: str
    values: tuple[str, ...] | Expression | None = None
    scores: Mapping[str, float] | Expression | None = None


@dataclass(frozen=True, slots=True)
class OptionsPlan:
    """The spec's options: defaults (every option has one) and a validator per option, with
    the schemas as written (the CLI reads them to parse values)."""

    defaults: Mapping[str, Any]
    validators: Mapping[str, OptionValidator]
    schemas: Mapping[str, Mapping[str, Any]]


@dataclass(frozen=True, slots=True)
class FieldPlan:
    """A field the spec declares (`fields.NAME.schema`): its JSON Schema, compiled, and whether
    an option of the same name gives the value of an item that has none (`from_option`)."""

    name: str
    validator: OptionValidator
    from_option: bool = False
    description: str = ""


@dataclass(frozen=True, slots=True)
class ScorerPlan:
    """A compiled spec: everything the interpreter runs, nothing it must look up.

    hash: sha256 of the spec source(s) and every template used (`engine.spec.document`). chain: this
    spec's id and the ids of the specs it extends, nearest first. sources: (file, text) of every
    spec file merged into this one, the spec's own first (with `templates`, the full text the
    store keeps per run). direction: ``higher_is_better`` or ``lower_is_better`` (`engine.core.direction`).
    required: run field → True, or an expression over `options` deciding per run. declared: the
    fields the spec declares beyond the run fields, by name.
    instructions: the system message template, or None. model: the spec's default judge model.
    cutoff: the spec's documented cut-off on the scale its default options give (`default_scale`),
    or None; `cutoff_at` gives it on another scale. scores: the named sub-scores in order
    (`SubScorePlan`); label: the label result (`LabelPlan`), or None.
    """

    id: str
    name: str
    description: str
    version: Union[int, str]
    path: Path
    hash: str
    options: OptionsPlan
    required: Mapping[str, Union[bool, Expression]]
    vars: tuple[tuple[str, Expression], ...]
    instructions: Template | None
    model: str | None
    stages: tuple[StagePlan, ...]
    score: ScorePlan
    reasons: tuple[ReasonPlan, ...]
    templates: Mapping[str, str]
    chain: tuple[str, ...] = ()
    declared: Mapping[str, FieldPlan] = field(default_factory=dict)
    sources: tuple[tuple[str, str], ...] = ()
    direction: Direction = HIGHER_IS_BETTER
    cutoff: float | None = None
    default_scale: float | None = None
    scores: tuple[SubScorePlan, ...] = ()
    label: LabelPlan | None = None

    def cutoff_at(self, scale: float | None) -> float | None:
        """The spec's cut-off on a run's `scale` (in proportion to `default_scale`; as written when
        either scale is unknown or 0); None when the spec declares none."""
        return self._in_proportion(self.cutoff, scale)

    def sub_cutoff_at(self, name: str, scale: float | None) -> float | None:
        """The documented cut-off of the sub-score `name` on a run's `scale` (as `cutoff_at`); None when
        it declares none. Raises `KeyError` for a name the spec does not declare."""
        found = {s.name: s for s in self.scores}[name]
        return self._in_proportion(found.cutoff, scale)

    def _in_proportion(self, cutoff: float | None, scale: float | None) -> float | None:
        if cutoff is None:
            return None
        if not scale or not self.default_scale:
            return cutoff
        return cutoff * float(scale) / self.default_scale

    @property
    def translated_reasons(self) -> bool:
        """Whether an engine-written reason (a reason case's template, the not-scorable reason)
        is given in a language besides English, so the item's language decides which is written."""
        texts = [r.template for r in self.reasons if r.template is not None]
        if self.score.not_scorable is not None:
            texts.append(self.score.not_scorable[1])
        return any(text.translated for text in texts)

    @property
    def uses_judge(self) -> bool:
        """Whether any stage or reason asks the judge."""
        return any(isinstance(s, PromptStagePlan) for s in self.stages) or any(r.prompt for r in self.reasons)


__all__ = ["CheckPlan", "ENGLISH", "FieldPlan", "JuryPlan", "LabelPlan", "SubScorePlan", "OptionsPlan",
           "PromptStagePlan", "ReasonPlan", "ReasonText",
           "RuleStagePlan", "SamplingPlan", "ScorePlan", "ScorerPlan", "StagePlan", "REASON_SCHEMA"]
