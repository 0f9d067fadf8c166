"""The spec format: what a spec author writes, as frozen pydantic models.

These models are the format's single source of truth: `spec_json_schema()` publishes them as
the JSON Schema editors use (``scorespec schema``), and `engine.spec.compile` turns a validated `Spec`
into a runnable `engine.interpret.scorer.Scorer`. Field descriptions below are what editors show.
"""

from __future__ import annotations

import copy
from typing import Annotated, Any, Literal, Union

from pydantic import BaseModel, BeforeValidator, ConfigDict, Discriminator, Field, Tag, model_validator

from ..core.direction import Direction

FORMAT_VERSION = 1
FIELD_NAME_PATTERN = r"^[a-z_][a-z0-9_]*$"
"""A field's name under `fields:` (a run field's, or one the scorer declares)."""

MAX_SAMPLES = 50
"""The most samples a stage may ask for."""


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class FieldSpec(_Model):
    """A field the scorer reads: a run field (input, output, ground_truth, context, system,
    tool_calls) or one the scorer declares, with a `schema`."""

    required: Union[bool, str] = Field(
        False,
        description="true, false, or an expression over `options` deciding per run "
        "(e.g. `options.requireGroundTruth`). A required field the item does not give (null or "
        "absent) fails the item before any judge call, and so does a required input, ground truth, "
        "context or system prompt with no text; an empty output or an empty list of tool calls is "
        "a real answer.",
    )
    description: str = Field("", description="What the field means for this scorer.")
    schema_: dict[str, Any] | None = Field(
        None, alias="schema",
        description="A field the scorer declares (any name that is not a run field): the JSON Schema "
        "(Draft 2020-12) its value must satisfy, checked per item. The item gives it by name; an option "
        "of the same name gives a default. Not allowed on a run field.",
    )


class JurySpec(_Model):
    """A panel of judge models, each asked the same question; their answers reduced to one."""

    models: list[str] = Field(
        min_length=1, description="The jurors: two or more distinct model strings (`provider/model`), each asked "
        "every question of the stage (or `samples` times) with its own provider settings, cache entries, usage and "
        "cost. Replaced by the caller's `--jury A,B,C`.",
    )
    reduce: str | None = Field(
        None, description="How the jurors' answers become one, as a stage's `reduce`: `majority`, `unanimous` "
        "(with `tie`: the value when they disagree), `mean`, `median`, `min`, `max`, or an expression over "
        "`samples` (the jurors' answers, in the order of `models`). Default: majority when the answer has an "
        "enum or boolean field, else mean.",
    )
    tie: Any = Field(None, description="With majority or unanimous: the value a tie (or a split jury) goes to, as "
                     "a stage's `tie`.")
    min_successful: int | None = Field(
        None, ge=1, description="The fewest jurors that must answer: a juror that fails after its retries is left "
        "out, and an item with fewer answers fails (kind `judge`, naming the failed models). Default: more than "
        "half of the jurors. Replaced by the caller's `--jury-min N`.",
    )


class JudgeSpec(_Model):
    """How the judge model is asked."""

    instructions: str | None = Field(
        None, description="Template file (under prompts/) rendered as the system message."
    )
    model: str | None = Field(
        None,
        description="Default model, `provider/model` (e.g. `openai/gpt-4o-mini`) or `local`. "
        "Overridden by the caller's model and by SCORESPEC_MODEL.",
    )
    temperature: float = Field(0.0, ge=0, le=2, description="Sampling temperature.")
    max_tokens: int = Field(1024, ge=1, description="Upper bound on tokens generated per call.")
    max_reasks: int = Field(
        2, ge=0, le=10, description="Re-asks after an invalid answer or a failed check."
    )
    reasoning_effort: Literal["minimal", "low", "medium", "high"] | None = Field(
        None, description="How hard a reasoning model thinks before it answers (sent as `reasoning_effort` to "
        "OpenAI's reasoning models; turns on extended thinking for Anthropic's). Part of the cache key and of "
        "the result. Settable per run with `--option judge.reasoning_effort=low`.",
    )
    reasoning_tokens: int | None = Field(
        None, ge=1, description="The room for a reasoning model's hidden reasoning, in tokens, added to each "
        "stage's max_tokens (which stays the room for the answer). Default 4096.",
    )
    family: Literal["chat", "reasoning", "thinking"] | None = Field(
        None, description="What the model accepts in a request, for a model scorespec's table does not know: "
        "`chat` (temperature, max_tokens, logprobs), `reasoning` (OpenAI's reasoning rules: "
        "max_completion_tokens, no temperature or logprobs) or `thinking` (Anthropic's extended thinking). "
        "Default: from the model's name.",
    )
    jury: JurySpec | None = Field(
        None, description="Ask a panel of models instead of one: every prompt stage (but a judge-written reason) "
        "is asked by each juror and their answers reduced. See Guides → Juries on the docs site.",
    )


def _after() -> Any:
    return Field(None, description="In a spec that extends another: place this item right after the one with "
                 "this id (default: last).")


class Check(_Model):
    """A condition on a judge's answer; when false the judge is re-asked with `message`."""

    id: str | None = Field(None, description="A name, so a spec that extends this one can override the check.")
    after: str | None = _after()
    expect: str = Field(description="Expression that must be true (`answer` is this stage's answer).")
    message: str = Field(description="Told to the judge when the check fails.")


class PairwiseSpec(_Model):
    """How a pairwise stage shows the two responses of an item (``output_a``, ``output_b``)."""

    order: Literal["both", "random", "fixed"] = Field(
        "both", description="`both` (the default): asked twice, A first then B first; the item is a win only "
        "when both orders agree, else a tie counted as inconsistent. `random`: asked once, the order drawn per "
        "item from the item's content (the same on every run). `fixed`: asked once, A first.",
    )
    winner: str = Field(
        "winner", pattern=r"^[A-Za-z_][A-Za-z0-9_]*$",
        description="The answer's field naming the winning position: a top-level string property whose enum is "
        "`A` (the response shown first), `B` (the one shown second) and optionally `tie`.",
    )


class PromptStage(_Model):
    """A stage answered by the judge model."""

    id: str = Field(pattern=r"^[a-z_][a-z0-9_]*$", description="Stage name; later expressions use it.")
    prompt: str = Field(description="Template file under prompts/, e.g. `faithfulness/verify.j2`.")
    output_schema: dict[str, Any] = Field(
        description="JSON Schema (Draft 2020-12, type object) the answer must satisfy. "
        'A value written `{$expr: "…"}` is computed per item (e.g. minItems from a claim count). A key that '
        "looks like a misspelled JSON Schema keyword (`enmu`) is a load error, since JSON Schema would ignore it."
    )
    when: str | None = Field(None, description="Expression; the stage is skipped when false.")
    for_each: str | None = Field(
        None, description="Expression giving a list: the judge is asked once per element, which the prompt, "
        "schema, checks and result see as `each` (its 0-based position: `each_index`); the stage's result "
        "is the list of the per-element results. One focused question at a time suits small judges.",
    )
    collect: str | None = Field(
        None, description="With for_each: an expression over `results` (the per-element results, in order) giving "
        "the stage's result, e.g. `{'verdicts': results}` for the reference's result shape; default: the list.",
    )
    checks: list[Check] = Field(default_factory=list, description="Re-ask conditions.")
    keep_first: list[str] = Field(
        default_factory=list,
        description="List fields of the answer (top-level properties of type array with `maxItems`) whose first "
        "`maxItems` items are kept when the judge lists more, instead of asking it again: the schema, the checks "
        "and `result` see the list cut. Later expressions read how many items the judge listed as "
        "`listed.STAGE.FIELD` (with for_each, a list: one per element), so a reason can say what was left out.",
    )
    pages: list[str] = Field(
        default_factory=list,
        description="List fields of the answer (top-level properties of type array with `maxItems`) that may run "
        "to more items than one answer holds: an answer whose list is full (exactly `maxItems` items) is followed "
        "by another call, the conversation kept, asking for the items after those, until a page comes back short "
        "or adds nothing new (at most 20 pages); a list longer than `maxItems` (a judge not held to the schema) is "
        "taken whole. The answer holds every page's items in order (its other fields from the first page), and "
        "later expressions read how many were listed as `listed.STAGE.FIELD`. One page costs one call.",
    )
    result: str | None = Field(
        None, description="Expression mapping the answer (`answer`) to the stage's result."
    )
    temperature: float | None = Field(None, ge=0, le=2, description="Overrides judge.temperature.")
    max_tokens: int | None = Field(None, ge=1, description="Overrides judge.max_tokens.")
    reasoning_effort: Literal["minimal", "low", "medium", "high"] | None = Field(
        None, description="Overrides judge.reasoning_effort.")
    reasoning_tokens: int | None = Field(None, ge=1, description="Overrides judge.reasoning_tokens.")
    jury: JurySpec | None = Field(None, description="Overrides judge.jury for this stage: its own panel of models.")
    samples: int | None = Field(
        None, ge=1, le=MAX_SAMPLES,
        description="Ask the judge this many times (with for_each: per element) and reduce the answers to one "
        "with `reduce`; the stage records every sample and their agreement. Above 1 the samples are drawn at the "
        "stage's or judge's temperature, or 0.7 when that is 0.",
    )
    reduce: str | None = Field(
        None,
        description="How samples become one answer: `majority` (the most common value of the answer's enum and "
        "boolean fields; see `tie`), `unanimous` (the value every sample gives, else `tie`), `mean`, `median`, "
        "`min` or `max` (of its number fields), or an expression over `samples` "
        "(the list of answers) giving the answer. Default: majority when the answer has an enum or boolean "
        "field, else mean when it has a number field.",
    )
    tie: Any = Field(
        None,
        description="With reduce: majority, the value a tie goes to, one of the voted field's enum values (e.g. "
        "`unsure`); a mapping field → value when several fields vote. Default: the value the earliest of the "
        "tied samples gave. With reduce: unanimous (required there), the value when the samples disagree.",
    )
    probabilities: Union[bool, str] = Field(
        False,
        description="Ask the judge for the label probabilities of the answer's enum and boolean fields: true, "
        "false, or an expression over `options` (e.g. `options.scoring == 'probability'`). Later expressions read "
        "them as `answer_probs.STAGE` (`{field: {value: probability}}`; a list with for_each); a judge that "
        "reports none falls back to the hard labels (1 for the value given) with a warning in the result.",
    )
    sampled_probabilities: Union[bool, Annotated[int, Field(ge=2, le=20)]] = Field(
        False,
        description="When the judge reports no label probabilities although the stage asked for them (a model "
        "that refuses or omits logprobs), ask the question this many times in all (true: 5) and take the share of "
        "the answers giving each label as its probability (the answer is their majority; the "
        "result records `scoring: sampled` and `probsSource: sampled`) instead of the hard label. False (the default): the hard label, with a warning.",
    )
    pairwise: PairwiseSpec | None = Field(
        None, description="Judge a pair: the prompt reads the item's two responses in positions as `pair.first` "
        "and `pair.second` (texts; `pair.order` is `AB` or `BA`), and the answer's winner (a position: A, B or "
        "tie) is mapped back to the response (output_a or output_b). The stage's result is `{winner: A | B | "
        "tie, consistent, orders: [{order, position, winner, answer}]}`; the item's result gets `pairwise`. "
        "Each order is its own judge call, cached on its own. Not with for_each, samples, probabilities, pages "
        "or result.",
    )
    examples: list[dict[str, Any]] = Field(
        default_factory=list, max_length=50,
        description="Worked examples shown to the judge: a list of mappings the stage's prompt reads as "
        "`examples` (each e.g. {input, output, context, answer, reason}; `answer`, when given, must satisfy the "
        "output schema). A prompt shows them through its examples slot (`{% block examples %}` in the shipped "
        "one-call prompts); empty by default, so the prompt is unchanged until examples are given. "
        "`scorespec align --strategies examples` writes them from labelled items.",
    )
    after: str | None = _after()


class RuleStage(_Model):
    """A stage computed by a registered function, without the judge."""

    id: str = Field(pattern=r"^[a-z_][a-z0-9_]*$", description="Stage name; later expressions use it.")
    function: str = Field(description="A registered rule function (see `scorespec list`).")
    args: dict[str, str] = Field(default_factory=dict, description="Argument name → expression.")
    when: str | None = Field(None, description="Expression; the stage is skipped when false.")
    after: str | None = _after()


def _stage_kind(value: Any) -> str:
    if isinstance(value, dict):
        return "rule" if "function" in value else "prompt"
    return "rule" if isinstance(value, RuleStage) else "prompt"


Stage = Annotated[
    Union[Annotated[PromptStage, Tag("prompt")], Annotated[RuleStage, Tag("rule")]],
    Discriminator(_stage_kind),
]


REASON_LANGUAGES_NOTE = (
    " Either one template (read as English) or a mapping of ISO 639-1 codes to templates, one per language "
    "(`{en: \"…\", fr: \"…\", de: \"…\"}`; `en` required): an item in a language the mapping gives gets that "
    "language's template, any other the English one (its result then says so: `reasonLanguage: en`). A spec "
    "that gives languages settles each item's language (`run.language`)."
)

def _reason_shape(value: Any) -> Any:
    """One error for a reason template of the wrong shape (rather than one per member of the union)."""
    if isinstance(value, str):
        return value
    if isinstance(value, dict):
        for code, text in value.items():
            if not isinstance(text, str):
                raise ValueError(f"the template of {code!r} must be text (got {type(text).__name__})")
        return value
    raise ValueError(f"a reason template is text, or a mapping of language codes to texts (got {type(value).__name__})")


# (`en` is required of the merged spec, checked when it compiles: a spec that extends another may give
# only the languages it changes)
_PER_LANGUAGE = Annotated[dict[str, str], Field(json_schema_extra={"propertyNames": {"pattern": "^[A-Za-z]{2}$"}})]
ReasonTemplate = Annotated[Union[str, _PER_LANGUAGE], BeforeValidator(_reason_shape)]
"""An engine-written reason: one Jinja template (English), or ISO 639-1 code → template."""


class NotScorable(_Model):
    """When there is nothing to judge, the item gets no score and this reason."""

    when: str = Field(description="Expression over run, options, vars and stage results.")
    reason: ReasonTemplate = Field(description="Template text (Jinja) explaining why." + REASON_LANGUAGES_NOTE)


class ScoreSpec(_Model):
    """How the score is computed."""

    not_scorable: NotScorable | None = Field(
        None, description="When `when` holds (e.g. no claims to check), the item gets no score, only `reason`.",
    )
    let: dict[str, str] = Field(
        default_factory=dict, description="Named expressions, evaluated in order; the formula uses them."
    )
    formula: str = Field(description="Expression giving the score in [0, scale].")
    round: int | None = Field(
        None, ge=0, le=12,
        description="Decimal places; half away from zero on the decimal the formula means, float noise removed "
        "first (0.575 → 0.58; 0.225, computed 0.22499999999999998, → 0.23).",
    )
    scale: str = Field(
        "options.scale", description="Expression giving the upper bound of the score."
    )


class SubScoreSpec(_Model):
    """A named sub-score: a formula of its own over the stages' answers, with its own direction
    and cut-off, on the main score's scale."""

    formula: str = Field(description="Expression giving the sub-score in [0, scale] (the main score's `scale`), "
                         "over the names the main formula sees before its `let` (run, options, vars, the stages' "
                         "results) and the sub-scores declared above this one (`scores.NAME`).")
    description: str = Field("", description="What the sub-score measures (shown in the reference page and "
                             "`render`).")
    direction: Direction | None = Field(
        None, description="Which values of this sub-score are better: `higher_is_better` or `lower_is_better`. "
        "Default: the spec's `direction`.",
    )
    cutoff: float | None = Field(
        None, ge=0, description="This sub-score's documented cut-off on the default scale (as the spec's `cutoff`: "
        "an item at least as good passes); `--item-cutoff SCORER.NAME=spec` applies it.",
    )
    round: int | None = Field(None, ge=0, le=12, description="Decimal places, as `score.round`.")


class LabelSpec(_Model):
    """A label result: one enum field of a prompt stage's answer, so an item's result is a label
    (and a score, from `scores` or the order of the values)."""

    stage: str = Field(pattern=r"^[a-z_][a-z0-9_]*$", description="The prompt stage whose answer gives the label "
                       "(asked once per item: no for_each).")
    field: str = Field(description="The answer's field holding the label (a top-level property with an `enum`).")
    values: Union[list[str], str, None] = Field(
        None, description="The allowed labels, best first: a list, or an expression over `options` (e.g. "
        "`options.labels`). Default: the field's `enum` in the stage's output schema.",
    )
    scores: Union[dict[str, Annotated[float, Field(ge=0, le=1)]], str, None] = Field(
        None, description="Label → score as a share of the scale (in [0, 1]), or an expression over `options` "
        "giving that mapping. Without `score:` in the spec the item's score is its label's; an item whose label the "
        "mapping does not name is not scorable (it keeps its label). Default: the values' order, the first 1 and "
        "the last 0 in even steps.",
    )


class ReasonCase(_Model):
    """One way to explain the score; the first case whose `when` holds is used. Give exactly one of
    `template` or `prompt`. Its expressions and templates also see `score` and `scale`."""

    id: str | None = Field(None, description="A name, so a spec that extends this one can override the case.")
    after: str | None = _after()
    when: str | None = Field(None, description="Expression; omitted means always.")
    template: ReasonTemplate | None = Field(
        None, description="Inline Jinja text rendered without the judge." + REASON_LANGUAGES_NOTE,
    )
    prompt: str | None = Field(
        None, description="Template file under prompts/; the judge answers {reason: string}."
    )

    @model_validator(mode="after")
    def _one_kind(self) -> "ReasonCase":
        if (self.template is None) == (self.prompt is None):
            raise ValueError("give exactly one of 'template' or 'prompt'")
        return self


SPEC_ID_PATTERN = r"^[a-z][a-z0-9_]*$"
"""What a scorer's id matches: a lower-case letter, then lower-case letters, digits and ``_``."""


class Spec(_Model):
    """A scorer, as data."""

    format: Literal[1] = Field(description="The spec format's version: this engine reads 1 (later engines "
                               "migrate older formats).")
    id: str = Field(pattern=SPEC_ID_PATTERN, description="The scorer's id: the file's stem.")
    extends: str | None = Field(
        None, description="The spec this one builds on: a scorer id (`faithfulness`) or a path to a YAML file, "
        "relative to this one. Mappings merge key by key (null removes a value), stages merge by id (a new one "
        "goes last, or right after the one its `after` names), checks and reason cases by id when they have "
        "one; other lists are replaced whole. See Guides → Extending a built-in on the docs site.",
    )
    abstract: bool = Field(
        False, description="A base for other specs, never run itself: name, description, version, stages and "
        "score may be left to the specs that extend it. Not inherited.",
    )
    name: str | None = Field(None, description="Human-readable name (required unless abstract).")
    description: str | None = Field(None, description="One sentence: what the score measures (required unless "
                                    "abstract).")
    notes: str | None = Field(
        None, description="Markdown for the scorer's reference page: how it works, what it suits, and where it "
        "deliberately differs from the reference implementation. Documentation only: never read when scoring. "
        "Not inherited (a spec that extends this one writes its own).",
    )
    version: Union[int, str, None] = Field(None, description="The scorer's own version; bump when behaviour "
                                           "changes (required unless abstract).")
    direction: Direction = Field(
        "higher_is_better", description="Which scores are better: `higher_is_better` (the default) or "
        "`lower_is_better` (e.g. hallucination, toxicity). `scorespec list`, summaries, eval thresholds (`LABEL=limit`: at least as good as "
        "limit) and `scorespec compare` (wins, losses, better, worse) follow it.",
    )
    cutoff: float | None = Field(
        None, ge=0,
        description="The scorer's documented cut-off: a score at or above it counts as a pass (for "
        "`higher_is_better`; at or below it for `lower_is_better`), on the scale the default options give "
        "(a run with another `scale` gets it in proportion). `calibrate` and `compare` use it as their "
        "default cut-off; `eval` applies it to each item only when asked (`--item-cutoff spec`). Must lie "
        "within [0, scale].",
    )
    fields: dict[str, FieldSpec] = Field(
        default_factory=dict,
        description="The fields the scorer reads: run fields (input, output, ground_truth, context, system, "
        "tool_calls; every run provides them all, empty when not given) and fields of its own, each "
        "with a `schema` (read as run.NAME).",
        json_schema_extra={"propertyNames": {"pattern": FIELD_NAME_PATTERN}},
    )
    options: dict[str, dict[str, Any]] = Field(
        default_factory=dict,
        description="Option name → JSON Schema with a `default` (and a `description`). User values are validated "
        "and merged over the defaults, so a partial override keeps the other defaults. `scale`, the score's upper "
        "bound, is every shipped scorer's option (from scorer_base). A key that looks like a misspelled JSON "
        "Schema keyword (`defualt`) is a load error, since JSON Schema would ignore it.",
    )
    judge: JudgeSpec = Field(
        default_factory=JudgeSpec,
        description="How the judge model is asked: system-message template, default model, temperature, "
        "tokens, re-asks. A spec without prompt stages or prompt reasons never asks it.",
    )
    vars: dict[str, str] = Field(
        default_factory=dict,
        description="Named expressions over run and options, evaluated before the stages.",
    )
    stages: list[Stage] | None = Field(None, min_length=1, description="Stages, run in order (required unless "
                                       "abstract). A stage with a `function` is a rule stage, any other a prompt "
                                       "stage.")
    score: ScoreSpec | None = Field(None, description="How the score is computed (required unless abstract, or "
                                    "unless `scores` or `label` gives it: then the sub-scores' mean, or the label's "
                                    "score).")
    scores: dict[str, SubScoreSpec] = Field(
        default_factory=dict,
        description="Named sub-scores, in order: each item's result carries `scores: {NAME: value}` beside its "
        "score, and the main formula may read them as `scores.NAME`. Summaries, reports and `--threshold "
        "SCORER.NAME=V` treat each as a score of its own.",
        json_schema_extra={"propertyNames": {"pattern": FIELD_NAME_PATTERN}},
    )
    label: LabelSpec | None = Field(None, description="A label result: the item's label is an answer field's value "
                                    "(`labelValue` in the result; `labelProbs` when the judge gives probabilities), "
                                    "counted per label in the summary; `calibrate` compares it with gold labels.")
    reason: list[ReasonCase] = Field(
        default_factory=list, description="How the score is explained; first matching case wins."
    )


CONCRETE_KEYS = ("name", "description", "version", "stages", "score")
"""What a spec that is not abstract must give (itself or through the spec it extends); `score` may be
left out when `scores` or `label` is given."""


def spec_json_schema() -> dict[str, Any]:
    """The JSON Schema (Draft 2020-12) of the spec format, as published by `scorespec schema`."""
    schema = Spec.model_json_schema()
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["title"] = "scorespec scorer spec"
    # a spec that is neither abstract nor extends another must be complete
    schema["if"] = {"anyOf": [{"required": ["abstract"], "properties": {"abstract": {"const": True}}},
                              {"required": ["extends"]}]}
    required = [key for key in CONCRETE_KEYS if key != "score"]
    schema["else"] = {"required": required, "anyOf": [{"required": [key]} for key in ("score", "scores", "label")]}
    _stage_patches(schema)
    return schema


def _stage_patches(schema: dict[str, Any]) -> None:
    """Let a spec that extends another give a stage by its id and only the keys it changes (the
    stages merge by id, and the merged spec is checked in full when it loads); a spec that extends
    none gives every stage whole."""
    defs = schema["$defs"]
    for kind in ("PromptStage", "RuleStage"):
        patch = copy.deepcopy(defs[kind])
        patch["required"] = ["id"]
        patch["title"] = f"{kind}Patch"
        patch["description"] = f"In a spec that extends another: the keys of its {kind} with this id that change."
        defs[f"{kind}Patch"] = patch
    whole = schema["properties"]["stages"]
    schema["properties"]["stages"] = {
        **{k: v for k, v in whole.items() if k != "anyOf"},
        "anyOf": [{"type": "array", "minItems": 1, "items": {"type": "object"}}, {"type": "null"}],
    }
    patches = {"type": "array", "minItems": 1,
               "items": {"anyOf": [{"$ref": "#/$defs/PromptStagePatch"}, {"$ref": "#/$defs/RuleStagePatch"}]}}
    schema["allOf"] = [{"if": {"required": ["extends"]},
                        "then": {"properties": {"stages": {"anyOf": [patches, {"type": "null"}]}}},
                        "else": {"properties": {"stages": {"anyOf": whole["anyOf"]}}}}]
