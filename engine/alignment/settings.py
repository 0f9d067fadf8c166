"""`AlignSettings`: what ``scorespec align`` reads, proposes and writes, as one frozen value."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..analysis.label_settings import built_settings, label_values
from ..spec.models import SPEC_ID_PATTERN
from .split import DEFAULT_FRACTIONS, parse_fractions

__all__ = ["STRATEGIES", "AlignSettings"]

STRATEGIES = ("instructions", "examples", "cutoff", "scoring")
"""The strategies, in the order their candidates are proposed."""


@dataclass(frozen=True)
class AlignSettings:
    """label_field, positive, negative: the human labels as `calibrate` reads them (without
    `positive`, graded numbers). cutoff: the score cut-off the parent and every candidate without
    its own are judged at (default: the spec's `cutoff`, else half the scale). stage: the prompt
    stage whose prompt is aligned (default: the last prompt stage). fractions: train, dev, test
    proportions, each > 0 (test may be 0 with `test_data`); seed: the split's and the sampling's seed. test_data:
    a separate held-out file (then the data splits into train and dev only). strategies: a subset
    of `STRATEGIES`; candidates: how many candidates at most (≥ 1); optimizer_model: the model
    that proposes instructions (default: the judge itself). name: the child's id (a spec id, not
    the parent's nor a shipped scorer's; default PARENT_aligned); out_dir: where ``scorer_specs/NAME.yaml`` and ``prompts/NAME/`` go. examples:
    worked examples per examples candidate; disagreements: how many the optimiser reads per
    proposal.

    Raises `TypeError` / `ValueError` naming a bad value."""

    label_field: str = "label"
    positive: tuple[Any, ...] | None = None
    negative: tuple[Any, ...] | None = None
    cutoff: float | None = None
    stage: str | None = None
    fractions: tuple[float, float, float] = DEFAULT_FRACTIONS
    seed: int = 0
    test_data: Any = None
    strategies: tuple[str, ...] = STRATEGIES
    candidates: int = 4
    optimizer_model: str | None = None
    name: str | None = None
    out_dir: Path = Path(".")
    examples: int = 4
    disagreements: int = 8

    def __post_init__(self) -> None:
        for name in ("positive", "negative"):
            object.__setattr__(self, name, label_values(name, getattr(self, name)))
        if self.negative is not None and self.positive is None:
            raise ValueError("negative label values need positive ones too")
        object.__setattr__(self, "fractions", parse_fractions(self.fractions))
        if self.fractions[2] == 0 and self.test_data is None:
            raise ValueError(f"--split {','.join(f'{f:g}' for f in self.fractions)}: a test share of 0 leaves no "
                             "item to test the child on: give train, dev and test shares > 0, or --test FILE")
        strategies = (self.strategies.split(",") if isinstance(self.strategies, str) else self.strategies)
        strategies = tuple(s.strip() for s in strategies if s.strip())
        unknown = [s for s in strategies if s not in STRATEGIES]
        if unknown or not strategies:
            raise ValueError(f"strategies {', '.join(unknown) or '(none)'}: choose among {', '.join(STRATEGIES)}")
        object.__setattr__(self, "strategies", tuple(dict.fromkeys(strategies)))
        for name in ("seed", "candidates", "examples", "disagreements"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int):
                raise TypeError(f"{name} must be an int, not {type(value).__name__}: {value!r}")
        if self.candidates < 1 or self.examples < 1 or self.disagreements < 1:
            raise ValueError("candidates, examples and disagreements must be ≥ 1")
        if self.cutoff is not None and (isinstance(self.cutoff, bool) or not isinstance(self.cutoff, (int, float))):
            raise TypeError(f"cutoff must be a number, not {type(self.cutoff).__name__}: {self.cutoff!r}")
        object.__setattr__(self, "out_dir", Path(self.out_dir))
        if self.name is not None and (not isinstance(self.name, str) or not re.fullmatch(SPEC_ID_PATTERN, self.name)):
            raise ValueError(f"--name {self.name!r}: a child's id is a spec id — a lower-case letter, then lower-case "
                             "letters, digits and _ (e.g. faithfulness_quick_begin)")

    @property
    def kind(self) -> str:
        """``binary`` with positive label values, else ``graded``."""
        return "binary" if self.positive is not None else "graded"

    @classmethod
    def build(cls, settings: AlignSettings | None = None, **changes: Any) -> AlignSettings:
        """`settings` (default: the defaults) with `changes` laid over it; `TypeError` for
        `settings` that is not an `AlignSettings`."""
        return built_settings(cls, settings, changes)
