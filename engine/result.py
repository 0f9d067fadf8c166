"""What a scorer run returns: `ScoreResult`, snake_case in Python, the seed's camelCase in JSON.

A result is exactly one of: scored (`score` in [0, scale], never NaN), not scorable
(`not_scorable` says why; no score), or failed (`error` says where and why; no score).
"""

from __future__ import annotations

import uuid
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, computed_field
from pydantic.alias_generators import to_camel

from .errors import ErrorKind


class _Out(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, serialize_by_alias=True)


class Usage(_Out):
    """Judge usage for one stage or one run. `seconds` is wall time spent in judge calls.
    `cache_hits`: calls answered from the judge-call cache (a hit makes no request: it adds 0
    to `calls` and to the tokens); `cache_misses`: calls the cache did not answer, so the judge
    was asked (both 0 when no cache is used; see `engine.judge_cache_layer`)."""

    calls: int = 0
    tokens_in: int = 0
    tokens_out: int = 0
    reasks: int = 0
    transport_retries: int = 0
    seconds: float = 0.0
    cache_hits: int = 0
    cache_misses: int = 0

    def add(self, other: "Usage") -> None:
        self.calls += other.calls
        self.tokens_in += other.tokens_in
        self.tokens_out += other.tokens_out
        self.reasks += other.reasks
        self.transport_retries += other.transport_retries
        self.seconds += other.seconds
        self.cache_hits += other.cache_hits
        self.cache_misses += other.cache_misses


class StageRecord(_Out):
    """One stage of one run: its result, and for prompt stages the prompt and the raw answer."""

    kind: str  # "prompt" | "rule"
    skipped: bool = False
    result: Any = None
    prompt: str | None = None
    raw_answer: str | None = None
    attempts: int = 0
    usage: Usage = Field(default_factory=Usage)


class NotScorableInfo(_Out):
    reason: str


class ItemError(_Out):
    """Why an item failed: the stage (None before any stage), the kind (`engine.errors.ErrorKind`), a message, the judge's last raw answer, attempts made."""

    stage: str | None = None
    kind: ErrorKind
    message: str
    raw_answer: str | None = None
    attempts: int = 0


class ScoreResult(_Out):
    """The outcome of one scorer on one item.

    score: float in [0, scale] when scored, else None. reason: the explanation (also set when
    not scorable). The seed's fields (`preprocess_step_result`, `analyze_step_result`, their
    prompts, `generate_reason_prompt`) mirror the stages named `preprocess` and `analyze` and
    the reason prompt; `stages` holds every stage by id.
    """

    run_id: str = Field(default_factory=lambda: str(uuid.uuid4()))
    scorer: str
    spec_version: int | str
    spec_hash: str
    model: str | None = None
    score: float | None = None
    reason: str | None = None
    not_scorable: NotScorableInfo | None = None
    error: ItemError | None = None
    preprocess_step_result: Any = None
    preprocess_prompt: str | None = None
    analyze_step_result: Any = None
    analyze_prompt: str | None = None
    generate_reason_prompt: str | None = None
    stages: dict[str, StageRecord] = Field(default_factory=dict)
    usage: Usage = Field(default_factory=Usage)

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
