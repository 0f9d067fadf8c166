"""What a scorer run returns: `ScoreResult`, snake_case in Python, the seed's camelCase in JSON.

A result is exactly one of: scored (`score` in [0, scale], never NaN), not scorable
(`not_scorable` says why; no score), or failed (`error` says where and why; no score).
"""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, computed_field, model_serializer, model_validator
from pydantic.alias_generators import to_camel

from .errors import ErrorKind


class _Out(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, serialize_by_alias=True)


class Usage(_Out):
    """Judge usage for one stage or one run. `seconds` is wall time spent in judge calls, the
    waits between transport retries included.
    `cache_hits`: calls answered from the judge-call cache (a hit makes no request: it adds 0
    to `calls` and to the tokens); `cache_misses`: calls the cache did not answer, so the judge
    was asked (both 0 when no cache is used; see `engine.judge.cache.layer`). `reasoning_tokens`
    (JSON ``reasoningTokens``): the part of `tokens_out` a reasoning model spent reasoning (output
    tokens on every bill; shown apart). `unreported` (JSON ``unreportedCalls``): calls whose
    provider reported no usable usage, so the tokens (and the cost) are unknown, not 0. Both are
    left out of the JSON when 0."""

    calls: int = 0
    tokens_in: int = 0
    tokens_out: int = 0
    reasks: int = 0
    transport_retries: int = 0
    seconds: float = 0.0
    cache_hits: int = 0
    cache_misses: int = 0
    reasoning_tokens: int = 0
    unreported: int = Field(0, alias="unreportedCalls")

    @property
    def tokens_known(self) -> bool:
        """Whether every call's tokens were reported (no `unreported` call)."""
        return not self.unreported

    @model_serializer(mode="wrap")
    def _zero_extras_left_out(self, handler: Any) -> Any:
        data = handler(self)
        if isinstance(data, dict):
            for key in ("reasoningTokens", "reasoning_tokens", "unreportedCalls", "unreported"):
                if data.get(key) == 0:
                    del data[key]
        return data

    def add(self, other: "Usage") -> None:
        """Add `other`'s counts and seconds to these, in place (a few times per item: the fields'
        values are summed directly, as the setter would store them, without its per-field work)."""
        mine, theirs = self.__dict__, other.__dict__
        for name in _SUMMED:
            mine[name] += theirs[name]
        self.__pydantic_fields_set__.update(_SUMMED)


_SUMMED = tuple(Usage.model_fields)


class _StageRecordBase(_Out):
    """What every stage's record holds: its kind, whether `when` skipped it, its result, and the
    prompt, raw answer, attempts and judge usage (a rule stage's: None, None, 0 and zero, kept so
    every stage has one JSON shape)."""

    kind: str
    skipped: bool = False
    result: Any = None
    prompt: str | None = None
    raw_answer: str | None = None
    attempts: int = 0
    usage: Usage = Field(default_factory=Usage)


class JurorRecord(_Out):
    """One juror's part of a stage a jury asked (`PromptStageRecord.jurors`): its `answer` (its
    samples reduced, when sampled: then `samples` and their `agreement` too; with ``for_each`` a
    list, one per element, None for an element it failed), the `attempts` and `usage` of its calls,
    and `error` (``kind: message``) when it failed after its retries and was left out (with
    ``for_each``: the first element it failed). None values are left out of the JSON."""

    answer: Any = None
    samples: list[Any] | None = None
    agreement: float | None = None
    attempts: int = 0
    usage: Usage = Field(default_factory=Usage)
    error: str | None = None

    @model_serializer(mode="wrap")
    def _set_keys(self, handler: Any) -> Any:
        return _without_none(handler(self), ("samples", "agreement", "error"))


class JurorTotals(_Out):
    """One juror over a whole result (`ScoreResult.jurors`): the `usage` of its calls, their cost
    (`cost_usd`, JSON ``costUsd``: set by a batch run from its price table, None when unpriced) and
    how many questions it `failed` (left out); `score`: on a scored result, the score the spec's
    formula gives with this juror's answers in place of the jury's (None when they give none:
    `engine.interpret.jury.juror_scores`), so `calibrate` can set each juror beside the jury."""

    usage: Usage = Field(default_factory=Usage)
    cost_usd: float | None = None
    failed: int = 0
    score: float | None = None


class PromptStageRecord(_StageRecordBase):
    """One prompt stage of one run (JSON ``kind: prompt``): its result, the prompt sent (with
    ``for_each``: each element's, numbered ``[i]``) and the judge's raw answer.

    A sampled stage (`engine.spec.sampling`) also records `samples`, every sample's validated answer
    in order (with ``for_each``: one list per element), `agreement` in [0, 1] (how far they agree
    with the reduced answer, `engine.interpret.reduce`; with ``for_each``: the lowest element's, each
    element's in `agreements`) and, for mean and median, the `spread` (max − min) of each number
    field (with ``for_each``: the largest over the elements). Its `raw_answer` is a JSON list of
    the samples' raw answers. These keys are left out of the JSON of a stage asked once.

    `answer_probs` (JSON ``answerProbs``): for a stage that asked for label probabilities
    (`engine.core.answer_probs`), each label field the judge reported them for → {value: probability}
    (``{"verdict": {"yes": 0.91, "no": 0.02, "unsure": 0.07}}``; with ``for_each`` a list, one per
    element, None for an element without; a sampled question's: the mean over its samples). Left
    out of the JSON when None: not asked, or the judge reported none.

    `listed`: for a stage that keeps the first items of a list (its ``keep_first``), how many
    items the judge listed in each such list when it listed more than the answer keeps
    (``{"statements": 41}``: the result holds the first ``maxItems``; with ``for_each`` a list,
    one per element, None for an element where nothing was left out; a sampled question's: the
    most over its samples). Left out of the JSON when None: nothing was left out.

    `reasoning_effort` (JSON ``reasoningEffort``): the effort a reasoning model was asked with.
    `probs_source` (``probsSource``): for a stage that asked for label probabilities, where they
    came from: ``logprobs`` (the judge reported them), ``sampled`` (the share of samples giving
    each label, for a judge without them) or ``hard`` (the label given counts 1). `sampled_at`
    (``sampledAt``): the temperature samples were drawn at when the model takes only its own (1),
    not the one the stage asked for. Each left out of the JSON when None.

    A stage asked by a jury (`engine.interpret.jury`) records `jurors`: juror model → its
    `JurorRecord` (answer, samples, attempts, usage, error), in the jury's order; `jury_votes`
    (``juryVotes``): for a voting reduction (majority, unanimous), one mapping per question (one
    per element with ``for_each``) of each answering juror → its vote (the voted field's value, or
    a mapping of them when several vote); its `agreement` is the share of answering jurors whose
    vote is the jury's (the lowest over the elements). Its usage and attempts are every juror's.
    Both left out of the JSON without a jury.
    """

    kind: Literal["prompt"] = "prompt"
    samples: list[Any] | None = None
    agreement: float | None = None
    agreements: list[float | None] | None = None
    spread: dict[str, float] | None = None
    answer_probs: Any = None
    listed: Any = None
    reasoning_effort: str | None = None
    probs_source: str | None = None
    sampled_at: float | None = None
    jurors: dict[str, JurorRecord] | None = None
    jury_votes: list[dict[str, Any]] | None = None

    @model_serializer(mode="wrap")
    def _sampling_keys_when_sampled(self, handler: Any) -> Any:
        return _without_none(handler(self), ("samples", "agreement", "agreements", "spread", "answerProbs",
                                             "answer_probs", "listed", "reasoningEffort", "reasoning_effort",
                                             "probsSource", "probs_source", "sampledAt", "sampled_at", "jurors",
                                             "juryVotes", "jury_votes"))


class RuleStageRecord(_StageRecordBase):
    """One rule stage of one run (JSON ``kind: rule``): its result, the registered function's
    value (JSON data); its prompt and raw answer are None, its attempts 0, its usage zero. It has
    no sampling or probability fields (`PromptStageRecord` has)."""

    kind: Literal["rule"] = "rule"


StageRecord = Annotated[PromptStageRecord | RuleStageRecord, Field(discriminator="kind")]
"""A stage's record, by its ``kind``: `PromptStageRecord` or `RuleStageRecord` (read back from
JSON by that key)."""


@dataclass(frozen=True)
class SeedField:
    """A field of the reference scorer's result shape that mirrors one stage: the stage's id and
    the Python names of the fields holding its result and its prompt (JSON: their camelCase)."""

    stage: str
    result: str
    prompt: str


SEED_FIELDS: tuple[SeedField, ...] = (
    SeedField("preprocess", "preprocess_step_result", "preprocess_prompt"),
    SeedField("analyze", "analyze_step_result", "analyze_prompt"),
)
"""The reference's seed fields: a result's stage named `stage`, when it has one, gives them
(`ScoreResult.preprocess_step_result`…); they are written to JSON before ``generateReasonPrompt``."""


def _without_none(data: Any, keys: tuple[str, ...]) -> Any:
    """`data` (a dumped model) without those of `keys` whose value is None."""
    if isinstance(data, dict):
        for key in keys:
            if key in data and data[key] is None:
                del data[key]
    return data


class PairOutcome(_Out):
    """A pairwise stage's outcome on one item (`engine.interpret.pairwise`; JSON ``pairwise``).

    winner: ``A`` (output_a won in every order asked), ``B`` (output_b did) or ``tie`` (the judge
    said tie, or the orders disagreed). consistent: whether the orders agreed (None when the pair
    was asked in one order only). orders: the orders asked (``AB``: output_a shown first; ``BA``:
    output_b first); positions: the position each order's answer named (``A``, ``B`` or ``tie``),
    in the same order; winners: what each maps back to (the response, or ``tie``). longer: the
    response with more characters (``A`` or ``B``), None when both are as long, for the length bias
    (`engine.run.pairwise_stats`)."""

    winner: Literal["A", "B", "tie"]
    consistent: bool | None = None
    orders: list[str] = Field(default_factory=list)
    positions: list[str] = Field(default_factory=list)
    winners: list[str] = Field(default_factory=list)
    longer: Literal["A", "B"] | None = None


class NotScorableInfo(_Out):
    reason: str


class ItemError(_Out):
    """Why an item failed: the stage (None before any stage), the kind (`engine.core.errors.ErrorKind`), a message, the judge's last raw answer, attempts made."""

    stage: str | None = None
    kind: ErrorKind
    message: str
    raw_answer: str | None = None
    attempts: int = 0


class ScoreResult(_Out):
    """The outcome of one scorer on one item.

    scorer: the scorer's id. label: the scorer's name in its run (`Scorer.label`; its id unless
    given, and so when missing from older JSON), which keys results in the out file, the store
    and summaries. score: float in [0, scale] when scored, else None. reason: the explanation
    (also set when not scorable). The seed's fields (`preprocess_step_result`, `analyze_step_result`, their
    prompts: read-only, from `stages` by the table `SEED_FIELDS`, and written to JSON from it;
    `generate_reason_prompt`, the judge-written reason's prompt) keep the reference's result shape;
    `stages` holds every stage by id (`PromptStageRecord` or `RuleStageRecord`). spec_hash: sha256 of the spec (merged
    over what it extends) and its templates; spec_chain: the spec's id and those it extends.
    agreement: the lowest agreement of its sampled stages (`StageRecord.agreement`), in [0, 1];
    cost_usd: what its judge calls cost in US dollars, set by a batch run from its price table
    (`engine.run.prices`; cache hits cost nothing). Both are left out of the JSON when None (no
    sampled stage; no price known, or not a batch run). scoring: for a spec with a stage that can
    ask for label probabilities (`probabilities:`), how its answers were counted: ``probability``
    (every answer by the judge's label probabilities), ``sampled`` (the judge reported none and the
    stage's ``sampled_probabilities`` took the shares of several answers' labels instead) or
    ``hard`` (by the labels given: the run did not ask, or the judge reported none, which
    `warnings` then says); None (left out of the JSON)
    for any other spec. warnings: what the reader of the score should know (a fallback to hard
    labels), None when nothing. language: the item's language the scorer used (an ISO 639-1 code;
    `engine.core.language`) and language_detected whether it was detected (else the item or the
    run's setting gave it); both None, and left out of the JSON, for a scorer that does not read
    the language. reason_language: the language of an engine-written reason (a spec's template)
    when it is not the item's: the spec gives none for the item's language, so it fell back to
    English (``en``; `warnings` says so too); None, and left out of the JSON, when the reason is in
    the item's language, written by the judge, or the scorer does not read the language.
    pairwise: for a spec with a pairwise stage, which response won and whether the orders agreed
    (`PairOutcome`); None, and left out of the JSON, for any other spec or a stage skipped.
    jurors: for a scorer with a jury (`engine.interpret.jury`), each juror's `JurorTotals` (usage,
    cost, questions failed); `usage` is every call's, the jurors' included, and `cost_usd` their
    sum; None (left out of the JSON) without a jury.
    scores: the spec's named sub-scores (``scores:``), name → value in [0, scale] (never NaN), in the
    spec's order; label_value (JSON ``labelValue``): the item's label (a spec's ``label:``), and
    label_probs (``labelProbs``) each allowed label's probability where the judge reported them.
    Each None, and left out of the JSON, for a spec without them (or an item that did not get them).
    """

    run_id: str = Field(default_factory=lambda: str(uuid.uuid4()))
    scorer: str
    label: str
    spec_version: int | str
    spec_hash: str
    spec_chain: list[str] = Field(default_factory=list)
    model: str | None = None
    score: float | None = None
    reason: str | None = None
    not_scorable: NotScorableInfo | None = None
    error: ItemError | None = None
    generate_reason_prompt: str | None = None
    stages: dict[str, StageRecord] = Field(default_factory=dict)
    usage: Usage = Field(default_factory=Usage)
    agreement: float | None = None
    cost_usd: float | None = None
    scoring: str | None = None
    warnings: list[str] | None = None
    language: str | None = None
    language_detected: bool | None = None
    reason_language: str | None = None
    pairwise: PairOutcome | None = None
    jurors: dict[str, JurorTotals] | None = None
    scores: dict[str, float] | None = None
    label_value: str | None = None
    label_probs: dict[str, float] | None = None

    @model_serializer(mode="wrap")
    def _optional_keys(self, handler: Any) -> Any:
        data = _without_none(handler(self), ("agreement", "costUsd", "cost_usd", "scoring", "warnings", "language",
                                             "languageDetected", "language_detected", "reasonLanguage",
                                             "reason_language", "pairwise", "jurors", "scores", "labelValue",
                                             "label_value", "labelProbs", "label_probs"))
        return self._with_seed_fields(data) if isinstance(data, dict) else data

    def _with_seed_fields(self, data: dict[str, Any]) -> dict[str, Any]:
        """`data` with the seed fields (`SEED_FIELDS`) before the reason prompt's key, each stage's
        values as `data` holds them (serialised), else as the record holds them."""
        camel = "generateReasonPrompt" in data
        anchor = "generateReasonPrompt" if camel else "generate_reason_prompt"
        if anchor not in data:
            return data
        dumped = data.get("stages")
        seeds: dict[str, Any] = {}
        for seed in SEED_FIELDS:
            shown = dumped.get(seed.stage) if isinstance(dumped, dict) else None
            if isinstance(shown, dict):
                value, prompt = shown.get("result"), shown.get("prompt")
            else:
                value, prompt = self._seed(seed.result), self._seed(seed.prompt)
            seeds[to_camel(seed.result) if camel else seed.result] = value
            seeds[to_camel(seed.prompt) if camel else seed.prompt] = prompt
        out: dict[str, Any] = {}
        for key, value in data.items():
            if key == anchor:
                out.update(seeds)
            out[key] = value
        return out

    def _seed(self, name: str) -> Any:
        """The value of the seed field `name` (`SEED_FIELDS`): its stage's result or prompt."""
        for seed in SEED_FIELDS:
            if name in (seed.result, seed.prompt):
                record = self.stages.get(seed.stage)
                if record is None:
                    return None
                return record.result if name == seed.result else record.prompt
        raise AttributeError(name)

    @property
    def preprocess_step_result(self) -> Any:
        """The result of the stage ``preprocess`` (`SEED_FIELDS`), None without one."""
        return self._seed("preprocess_step_result")

    @property
    def preprocess_prompt(self) -> str | None:
        """The prompt of the stage ``preprocess``, None without one (or for a rule stage)."""
        return self._seed("preprocess_prompt")

    @property
    def analyze_step_result(self) -> Any:
        """The result of the stage ``analyze`` (`SEED_FIELDS`), None without one."""
        return self._seed("analyze_step_result")

    @property
    def analyze_prompt(self) -> str | None:
        """The prompt of the stage ``analyze``, None without one (or for a rule stage)."""
        return self._seed("analyze_prompt")

    @model_validator(mode="before")
    @classmethod
    def _label_defaults_to_the_scorer(cls, data: Any) -> Any:
        if isinstance(data, dict) and data.get("label") is None and "scorer" in data:
            return {**data, "label": data["scorer"]}
        return data

    @computed_field  # type: ignore[prop-decorator]
    @property
    def status(self) -> str:
        """``scored``, ``not_scorable`` or ``failed``."""
        if self.error is not None:
            return "failed"
        if self.not_scorable is not None:
            return "not_scorable"
        return "scored"

    def to_json_dict(self) -> dict[str, Any]:
        """The camelCase JSON form (as `scorespec run --json` prints it)."""
        return self.model_dump(mode="json", by_alias=True)


def result_status(result: dict[str, Any]) -> str:
    """``failed``, ``not_scorable`` or ``scored`` for a result's JSON dict (`ScoreResult.status`
    of its camelCase form, as the out file and the store hold it)."""
    if result.get("error"):
        return "failed"
    if result.get("notScorable"):
        return "not_scorable"
    return "scored"


def json_text(value: Any) -> str:
    """JSON text of a result, an item or a run's record, for the out file and the store: UTF-8
    as is, falling back to ASCII escapes when the value holds text that cannot be encoded (a
    lone surrogate from a JSON ``\\ud800``). Values JSON cannot hold are written as `str`."""
    text = json.dumps(value, ensure_ascii=False, default=str)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        text = json.dumps(value, ensure_ascii=True, default=str)
    return text
