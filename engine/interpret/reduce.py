"""Reducing a sampled stage's answers to one, and how far the samples agree.

A stage asked N times (`engine.spec.plans.SamplingPlan`) gets N validated answers, in sample order.
They become one answer, and an **agreement** in [0, 1] says how sure the judge was:

- **majority** (enum and boolean fields): the combination of the voted fields' values most
  samples gave wins; the answer is the first sample that gave it (its other fields, such as a
  reason, come with it). A tie goes to the plan's ``tie`` values when given — the answer is then
  the first sample that gave them, else the first tied sample with its voted fields set to them
  — and otherwise to the combination the earliest tied sample gave. Agreement: the share of
  samples whose voted fields equal the answer's (a tie sent to a value no sample gave: 0).
- **unanimous** (enum and boolean fields): the combination every sample gave; when they differ,
  the plan's ``tie`` values (the first sample that gave them, else the first sample with its
  voted fields set to them). Agreement as for majority.
- **mean** / **median** / **min** / **max** (number fields): each number field of the first sample
  replaced by the mean, median, least or greatest value of that field over the samples (a mean
  may be fractional on an integer field).
  The **spread** of a field is max − min over the samples; agreement: 1 − spread / (the field's
  range), the lowest over the fields whose schema bounds them (``minimum`` / ``maximum``, their
  exclusive forms, or a numeric ``enum``); None when no field is bounded (the spread still says
  how far apart the samples were).
- **expression**: the value is the answer; agreement: the share of samples equal to it.
"""

from __future__ import annotations

import json
import math
import statistics
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..spec.plans import SamplingPlan

__all__ = ["Reduced", "agreeing_share", "central", "majority", "reduce_samples", "unanimous"]

_CENTRAL = {"mean": statistics.fmean, "median": statistics.median, "min": min, "max": max}


@dataclass(frozen=True)
class Reduced:
    """One answer from several: `answer`, `agreement` in [0, 1] (None when it cannot be said),
    and for mean and median the `spread` (max − min) of each number field."""

    answer: Any
    agreement: float | None
    spread: dict[str, float] | None = None


def _field(sample: Any, name: str) -> Any:
    return sample.get(name) if isinstance(sample, Mapping) else None


def _key(value: Any) -> str:
    """A vote's identity: equal JSON values vote alike (true and 1 do not)."""
    return json.dumps(value, sort_keys=True, ensure_ascii=False)


def majority(samples: Sequence[Any], fields: Sequence[str], tie: Sequence[Any] | None = None) -> Reduced:
    """The majority answer over the voted `fields` of `samples` (non-empty); see the module
    docstring. `tie`: the value a tie goes to per field, in `fields` order."""
    votes = [tuple(_key(_field(s, f)) for f in fields) for s in samples]
    counts = Counter(votes)
    top = max(counts.values())
    leaders = [vote for vote in dict.fromkeys(votes) if counts[vote] == top]  # in order of first appearance
    if len(leaders) > 1 and tie is not None:
        return _chosen(samples, votes, fields, tie)
    return _chosen(samples, votes, fields, None, leaders[0])


def unanimous(samples: Sequence[Any], fields: Sequence[str], tie: Sequence[Any] | None) -> Reduced:
    """The combination of the voted `fields` every one of `samples` (non-empty) gave, else the
    `tie` values (in `fields` order; None: the majority's); see the module docstring."""
    votes = [tuple(_key(_field(s, f)) for f in fields) for s in samples]
    if len(set(votes)) == 1 or tie is None:
        return majority(samples, fields, tie)
    return _chosen(samples, votes, fields, tie)


def _chosen(samples: Sequence[Any], votes: list[tuple[str, ...]], fields: Sequence[str], tie: Sequence[Any] | None,
            winner: tuple[str, ...] | None = None) -> Reduced:
    """The first sample whose vote is `winner` (given, or the `tie` values'), else the first sample
    with its voted fields set to the tie values; agreement: the share voting for it."""
    if winner is None:
        winner = tuple(_key(v) for v in tie or ())
    answer = next((s for s, vote in zip(samples, votes) if vote == winner), None)
    if answer is None:  # a tie sent to values no sample gave
        first = samples[0]
        answer = {**first, **dict(zip(fields, tie or ()))} if isinstance(first, Mapping) else first
    return Reduced(answer, sum(vote == winner for vote in votes) / len(votes))


def _bounds(node: Any) -> tuple[float, float] | None:
    """The range a number field's schema allows, when it bounds both ends."""
    if not isinstance(node, Mapping):
        return None

    def number(value: Any) -> float | None:
        ok = isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
        return float(value) if ok else None

    low = number(node.get("minimum"))
    low = number(node.get("exclusiveMinimum")) if low is None else low
    high = number(node.get("maximum"))
    high = number(node.get("exclusiveMaximum")) if high is None else high
    enum = node.get("enum")
    if (low is None or high is None) and isinstance(enum, list):
        values = [v for v in map(number, enum) if v is not None]
        if values:
            low, high = min(values), max(values)
    return (low, high) if low is not None and high is not None and high > low else None


def central(samples: Sequence[Any], fields: Sequence[str], how: str, schema: Mapping[str, Any]) -> Reduced:
    """The `how` (``mean``, ``median``, ``min`` or ``max``) of each number field over `samples` (non-empty), in the
    first sample's place; agreement and spread as in the module docstring. `schema`: the answer's
    schema for this item (its fields' bounds)."""
    answer = dict(samples[0]) if isinstance(samples[0], Mapping) else samples[0]
    props = schema.get("properties") if isinstance(schema.get("properties"), Mapping) else {}
    spread: dict[str, float] = {}
    agreements: list[float] = []
    for name in fields:
        values = [v for v in (_field(s, name) for s in samples)
                  if isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)]
        if not values or not isinstance(answer, dict):
            continue
        value = _CENTRAL[how](values)
        whole = all(isinstance(v, int) for v in values) and float(value).is_integer()
        answer[name] = int(value) if whole else float(value)  # integers stay integers when they can
        spread[name] = float(max(values) - min(values))
        bounds = _bounds(props.get(name))
        if bounds is not None:
            agreements.append(min(max(1.0 - spread[name] / (bounds[1] - bounds[0]), 0.0), 1.0))
    return Reduced(answer, min(agreements) if agreements else None, spread)


def agreeing_share(samples: Sequence[Any], value: Any) -> float:
    """The share of `samples` (non-empty) equal to `value` as JSON values."""
    wanted = _key(value)
    return sum(_key(s) == wanted for s in samples) / len(samples)


def reduce_samples(sampling: SamplingPlan, samples: Sequence[Any], schema: Mapping[str, Any]) -> Reduced:
    """`samples` (non-empty, in sample order) reduced by the plan's built-in method (``majority``,
    ``unanimous``, ``mean``, ``median``, ``min``, ``max``); an ``expression`` plan is evaluated by the interpreter, which then
    calls `agreeing_share`. Raises ValueError for no samples or an expression plan."""
    if not samples:
        raise ValueError("no sample to reduce")
    if sampling.method == "majority":
        return majority(samples, sampling.fields, sampling.tie)
    if sampling.method == "unanimous":
        return unanimous(samples, sampling.fields, sampling.tie)
    if sampling.method in _CENTRAL:
        return central(samples, sampling.fields, sampling.method, schema)
    raise ValueError(f"reduce_samples: the {sampling.method!r} reduction is evaluated by the interpreter")
