"""Sampling a prompt stage, as planned at load: `samples`, `reduce` and `tie` → a `SamplingPlan`.

A stage may ask each of its questions several times (``samples: N``) and reduce the answers to
one (``reduce:``). What a reduction reads is the answer's top-level fields, as its output schema
declares them:

- ``majority`` votes over the **enum and boolean** fields (the most common combination of their
  values wins; ``tie:`` names the value a tie goes to, else the earliest tied sample's wins);
- ``unanimous`` takes the value every answer gives to those fields, and ``tie:`` (required) when
  they disagree;
- ``mean``, ``median``, ``min`` and ``max`` reduce the **number** fields (type number or integer);
- anything else is an expression over ``samples`` (the list of answers) giving the answer.

Without ``reduce:`` a stage whose answer has an enum or boolean field votes, else one with a
number field takes the mean; a stage with neither (free text, a list of claims) can be sampled
only with a ``reduce`` expression, and is otherwise always asked once (`with_samples` says
which stages a run's ``--samples`` left alone). Sampled questions are asked at the stage's or
the judge's temperature, or `DEFAULT_SAMPLE_TEMPERATURE` when that is 0: samples at 0 would
repeat one answer. Load-time problems (a majority with nothing to vote on, a tie value the
field cannot take, a sampled stage that writes ``temperature: 0``) are placed at their line.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable, Mapping
from typing import Any

from ..core.errors import did_you_mean
from .document import Document
from .expressions import Expression
from .models import JudgeSpec, PromptStage
from .plans import PromptStagePlan, SamplingPlan, ScorerPlan

DEFAULT_SAMPLE_TEMPERATURE = 0.7
"""The temperature samples are drawn at when the stage and the judge block say 0 (or nothing)."""

BUILT_IN = ("majority", "unanimous", "mean", "median", "min", "max")
CENTRAL = ("mean", "median", "min", "max")
"""The built-in reductions over number fields."""
"""The reductions named by a word; any other ``reduce`` is an expression over ``samples``."""

__all__ = ["BUILT_IN", "CENTRAL", "DEFAULT_SAMPLE_TEMPERATURE", "is_expression", "number_fields", "sampling_plan",
           "vote_fields", "with_samples"]


def _types(node: Mapping[str, Any]) -> set[str]:
    kind = node.get("type")
    return {kind} if isinstance(kind, str) else {k for k in kind if isinstance(k, str)} if isinstance(kind, list) \
        else set()


def vote_fields(schema: Mapping[str, Any]) -> list[tuple[str, list[Any]]]:
    """The answer's top-level fields a majority votes on, in schema order, each with the values
    it can take: an ``enum``'s values, or ``[true, false]`` for a boolean."""
    found = []
    props = schema.get("properties")
    for name, node in (props.items() if isinstance(props, Mapping) else ()):
        if not isinstance(node, Mapping):
            continue
        if isinstance(node.get("enum"), list):
            found.append((str(name), list(node["enum"])))
        elif _types(node) == {"boolean"}:
            found.append((str(name), [True, False]))
    return found


def number_fields(schema: Mapping[str, Any]) -> list[str]:
    """The answer's top-level number fields (type number or integer), in schema order."""
    props = schema.get("properties")
    return [str(name) for name, node in (props.items() if isinstance(props, Mapping) else ())
            if isinstance(node, Mapping) and _types(node) and _types(node) <= {"number", "integer"}]


def is_expression(reduce: str | None) -> bool:
    """Whether a stage's ``reduce`` is an expression over ``samples`` (not a built-in word)."""
    return reduce is not None and reduce.strip() not in BUILT_IN


def sampling_plan(stage: PromptStage, key: str, schema: Mapping[str, Any], judge: JudgeSpec, doc: Document,
                  compile_expr: Callable[[str, str], Expression | None]) -> SamplingPlan | None:
    """The stage's sampling plan, or None when it cannot be sampled (see the module docstring).

    stage: the prompt stage as written, at `key` (``stages[1]``); schema: its output schema as
    checked at load; compile_expr(source, key_path): compiles a ``reduce`` expression in the
    stage's scope with ``samples`` added (None when it failed). Problems go to `doc`.
    """
    n = stage.samples or 1
    if n > 1 and stage.temperature == 0:
        doc.add("sampling", f"{key}.temperature", f"samples: {n} at temperature 0 would ask for one answer {n} "
                "times", f"remove the temperature (samples are drawn at the judge's, or "
                f"{DEFAULT_SAMPLE_TEMPERATURE}) or set one above 0")
    temperature = next((t for t in (stage.temperature, judge.temperature) if t), DEFAULT_SAMPLE_TEMPERATURE)
    votes, numbers = vote_fields(schema), number_fields(schema)
    word = stage.reduce.strip() if stage.reduce is not None else None
    expression = None
    if word is None:
        method = "majority" if votes else "mean" if numbers else None
        if method is None and stage.samples is not None and stage.samples > 1:
            doc.add("sampling", f"{key}.samples", "the samples cannot be reduced: the answer has no enum, boolean or "
                    "number field at its top level", "write reduce: an expression over samples (the list of "
                    "answers), e.g. \"samples | first\"")
    elif word in ("majority", "unanimous"):
        method = word
        if word == "unanimous" and stage.tie is None:
            doc.add("sampling", f"{key}.tie", "reduce: unanimous needs tie: the value the answer takes when they "
                    "disagree", "add tie: one of the voted field's values (e.g. false)")
        if not votes:
            doc.add("sampling", f"{key}.reduce", f"reduce: {word} needs an enum or boolean field at the top level "
                    "of the answer, and this output schema has none", "ask one question per element with for_each, "
                    "or write reduce: an expression over samples")
    elif word in CENTRAL:
        method = word
        if not numbers:
            doc.add("sampling", f"{key}.reduce", f"reduce: {word} needs a number field at the top level of the "
                    "answer, and this output schema has none", "use reduce: majority for enum or boolean "
                    "answers, or an expression over samples")
    else:
        method = "expression"
        expression = compile_expr(stage.reduce or "", f"{key}.reduce")
    tie = None
    if stage.tie is not None and method not in ("majority", "unanimous"):
        doc.add("sampling", f"{key}.tie", "tie applies only to reduce: majority or unanimous",
                "remove tie, or reduce by majority")
    elif stage.tie is not None:
        tie = _tie(stage, key, votes, doc)
    if method is None:
        return None
    fields = tuple(name for name, _ in votes) if method in ("majority", "unanimous") else tuple(numbers) \
        if method in CENTRAL else ()
    return SamplingPlan(n, temperature, method, fields, tie, expression)


def _tie(stage: PromptStage, key: str, votes: list[tuple[str, list[Any]]], doc: Document) -> tuple[Any, ...] | None:
    """The tie values in the voted fields' order; problems (a value a field cannot take, a
    scalar tie where several fields vote) recorded in `doc`."""
    if not votes:
        return None
    where = f"{key}.tie"
    given = stage.tie
    if not isinstance(given, Mapping):
        if len(votes) > 1:
            names = ", ".join(name for name, _ in votes)
            doc.add("sampling", where, f"{len(votes)} fields vote ({names}): say the tie value of each",
                    "write tie as a mapping, e.g. {" + ", ".join(f"{name}: …" for name, _ in votes) + "}")
            return None
        given = {votes[0][0]: given}
    values: list[Any] = []
    allowed_by_name = dict(votes)
    for name in given:
        if name not in allowed_by_name:
            doc.add("sampling", f"{where}.{name}", f"{name!r} is not a field that votes", did_you_mean(
                str(name), allowed_by_name))
    for name, allowed in votes:
        if name not in given:
            shown = ", ".join(json.dumps(a, ensure_ascii=False) for a in allowed)
            doc.add("sampling", where, f"the tie value of {name!r} is missing", f"add {name}: one of {shown}")
            continue
        value = given[name]
        at = where if not isinstance(stage.tie, Mapping) else f"{where}.{name}"
        if not any(value == option and isinstance(value, bool) == isinstance(option, bool) for option in allowed):
            if allowed == [True, False]:
                hint = "write true or false (YAML 1.2 reads only true/false as booleans)"
            else:
                hint = did_you_mean(str(value), [str(a) for a in allowed]) if isinstance(value, str) else ""
            shown = ", ".join(json.dumps(a, ensure_ascii=False) for a in allowed)
            doc.add("sampling", at, f"tie {json.dumps(value, ensure_ascii=False)} is not a value {name!r} can take "
                    f"({shown})", hint)
        values.append(value)
    return tuple(values) if len(values) == len(votes) else None


def with_samples(plan: ScorerPlan, samples: int | None) -> tuple[ScorerPlan, list[str]]:
    """`plan` with every prompt stage that can be sampled asking `samples` times (None: as the
    spec says), and the ids of the stages left as they are (no reduction applies to their
    answer). Raises ValueError for `samples` below 1 or above `engine.spec.models.MAX_SAMPLES`."""
    from .models import MAX_SAMPLES

    if samples is None:
        return plan, []
    if isinstance(samples, bool) or not isinstance(samples, int) or not 1 <= samples <= MAX_SAMPLES:
        raise ValueError(f"samples: an integer from 1 to {MAX_SAMPLES} is needed, got {samples!r}")
    stages, left = [], []
    for stage in plan.stages:
        if isinstance(stage, PromptStagePlan):
            if stage.sampling is None:
                left.append(stage.id)
            else:
                stage = dataclasses.replace(stage, sampling=dataclasses.replace(stage.sampling, n=samples))
        stages.append(stage)
    return dataclasses.replace(plan, stages=tuple(stages)), left
