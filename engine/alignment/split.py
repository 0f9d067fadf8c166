"""Honest splits: labelled items into train, dev and test, stratified by label and seeded.

Within each stratum (a binary label's class; a graded label's value) the items are shuffled by
`random.Random(seed)` and cut in the given proportions, each part's count rounded half up (the
rest goes to train), so every part holds each class in about the data's proportion and the same
data and seed give the same split. A stratum too small to give a part an item gives it none.
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from decimal import ROUND_HALF_UP, Decimal
from typing import Any

__all__ = ["DEFAULT_FRACTIONS", "MINIMUM", "Split", "check_parts", "parse_fractions", "stratified_split"]

DEFAULT_FRACTIONS = (0.5, 0.25, 0.25)
"""train, dev, test."""

MINIMUM = (2, 1, 1)
"""The items of each class (binary labels) or in all (graded, doubled) that train, dev and test need."""


@dataclass(frozen=True)
class Split:
    """Item keys of each part, in the data's order. seed: the shuffle's seed; fractions: the
    proportions asked for (train, dev, test; test 0 when a separate test file is given)."""

    train: tuple[str, ...]
    dev: tuple[str, ...]
    test: tuple[str, ...]
    seed: int = 0
    fractions: tuple[float, float, float] = DEFAULT_FRACTIONS

    def counts(self) -> dict[str, int]:
        """``{"train": n, "dev": n, "test": n}``."""
        return {"train": len(self.train), "dev": len(self.dev), "test": len(self.test)}


def parse_fractions(text: str | Sequence[float] | None) -> tuple[float, float, float]:
    """``"0.5,0.25,0.25"`` (or three numbers) → (train, dev, test), each ≥ 0, train and dev > 0,
    summing to 1 (within 1e-6). Raises `ValueError` naming what is wrong."""
    if text is None:
        return DEFAULT_FRACTIONS
    parts = [p for p in text.split(",")] if isinstance(text, str) else list(text)
    try:
        values = tuple(float(p) for p in parts)
    except (TypeError, ValueError):
        raise ValueError(f"--split {text!r}: expected three numbers TRAIN,DEV,TEST such as 0.5,0.25,0.25") from None
    if len(values) != 3:
        raise ValueError(f"--split {text!r}: expected three numbers TRAIN,DEV,TEST, not {len(values)}")
    if any(v < 0 for v in values) or values[0] <= 0 or values[1] <= 0:
        raise ValueError(f"--split {text!r}: train and dev must be > 0 and test ≥ 0")
    if abs(sum(values) - 1) > 1e-6:
        raise ValueError(f"--split {text!r}: the three parts must sum to 1, not {sum(values):g}")
    return values  # type: ignore[return-value]


def _count(n: int, fraction: float) -> int:
    return int((Decimal(n) * Decimal(repr(fraction))).quantize(Decimal(1), ROUND_HALF_UP))


def stratified_split(strata: Mapping[str, Any], fractions: Sequence[float] = DEFAULT_FRACTIONS,
                     seed: int = 0) -> Split:
    """`strata`: item key → its stratum (e.g. ``"positive"`` / ``"negative"``), in the data's order.
    Returns the `Split` (see the module docstring). Raises `ValueError` for fractions that
    `parse_fractions` refuses, or a split that leaves train or dev empty."""
    train_f, dev_f, test_f = parse_fractions(fractions)
    groups: dict[str, list[str]] = {}
    for key, stratum in strata.items():
        groups.setdefault(repr(stratum), []).append(key)
    rng = random.Random(seed)
    part: dict[str, str] = {}
    for name in sorted(groups):
        keys = list(groups[name])
        rng.shuffle(keys)
        n_test, n_dev = _count(len(keys), test_f), _count(len(keys), dev_f)
        if n_test + n_dev > len(keys):  # tiny strata: test first, then dev
            n_dev = len(keys) - n_test
        for i, key in enumerate(keys):
            part[key] = "test" if i < n_test else "dev" if i < n_test + n_dev else "train"
    order = list(strata)
    split = Split(tuple(k for k in order if part[k] == "train"), tuple(k for k in order if part[k] == "dev"),
                  tuple(k for k in order if part[k] == "test"), seed, (train_f, dev_f, test_f))
    if not split.train or not split.dev:
        raise ValueError(f"{len(order)} labelled item(s) give an empty {'train' if not split.train else 'dev'} "
                         "split: give more labelled items or other --split proportions")
    return split


def per_stratum(fractions: Sequence[float], need: Sequence[int] = MINIMUM) -> int | None:
    """The fewest items of one stratum that the proportions cut into parts holding at least
    `need` (train, dev, test; a test share of 0 needs no test item), None beyond 10,000."""
    train_f, dev_f, test_f = fractions
    for n in range(1, 10_001):
        n_test, n_dev = _count(n, test_f), _count(n, dev_f)
        if n_test + n_dev > n:
            n_dev = n - n_test
        if n - n_test - n_dev >= need[0] and n_dev >= need[1] and (test_f == 0 or n_test >= need[2]):
            return n
    return None


def check_parts(split: Split, strata: Mapping[str, Any], test: Sequence[Any] | None, names: Mapping[Any, str]
                | None) -> None:
    """Raise `ValueError` when a part is too small to choose and test on. With `names` (binary
    labels: stratum → its name, e.g. True → "positive"), each class needs `MINIMUM` items in
    train, dev and test; without (graded labels), each part needs twice `MINIMUM` items and the
    labels two values at least. `test`: the strata of a separate test file's items (None: the
    split's test part). The message says what is there and what is needed."""
    parts = {"train": [strata[k] for k in split.train], "dev": [strata[k] for k in split.dev],
             "test": list(test) if test is not None else [strata[k] for k in split.test]}
    short = []
    if names is not None:
        for part, need in zip(parts, MINIMUM):
            for value, name in names.items():
                have = sum(1 for v in parts[part] if v == value)
                if have < need:
                    short.append(f"{part} has {have} {name} item(s), needs {need}")
        if short:
            per = per_stratum(split.fractions)
            raise ValueError(f"too few labelled items to split ({', '.join(short)}): each class needs at least "
                             f"{MINIMUM[0]} items in train, {MINIMUM[1]} in dev and {MINIMUM[2]} in test"
                             + (f" — {per} labelled items of each class with --split "
                                f"{','.join(f'{f:g}' for f in split.fractions)}" if per else "")
                             + "; give more labelled items (a larger --limit) or other --split proportions")
        return
    for part, need in zip(parts, MINIMUM):
        if len(parts[part]) < 2 * need:
            short.append(f"{part} has {len(parts[part])} item(s), needs {2 * need}")
    if short:
        raise ValueError(f"too few labelled items to split ({', '.join(short)}); give more labelled items (a larger "
                         "--limit) or other --split proportions")
