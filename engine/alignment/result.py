"""What ``scorespec align`` found: every candidate with its dev figures, the test comparison, the
files written. `AlignResult.to_json_dict` is the ``--json`` record and the JSON file beside the
child spec: keys ``parent``, ``child``, ``split`` (``train``, ``dev``, ``test``: counts),
``candidates`` (list) and ``test`` (``parent`` and ``child``: ``balancedAccuracy``, ``rocAuc``,
``n``; ``mcnemar``: ``pValue``), ``adopted`` (bool) and ``rejected`` (why not, or null)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .selection import Figures, TestComparison

__all__ = ["AlignResult", "Candidate"]


@dataclass
class Candidate:
    """One candidate child: its `name` (its spec id in the work folder), `strategy`, what it
    changes in words (`change`), its spec file, its dev figures (None until run, or when it was
    dropped: `dropped` says why), its cut-off, the judge cost of its dev run in US dollars (None:
    no price) and its judge calls."""

    name: str
    strategy: str
    change: str
    spec: Path | None = None
    dev: Figures | None = None
    cutoff: float | None = None
    cost_usd: float | None = None
    judge_calls: int = 0
    dropped: str | None = None

    def to_json_dict(self) -> dict[str, Any]:
        return {"name": self.name, "strategy": self.strategy, "change": self.change,
                "spec": str(self.spec) if self.spec else None, "dev": self.dev.to_json_dict() if self.dev else None,
                "cutoff": self.cutoff, "costUsd": self.cost_usd, "judgeCalls": self.judge_calls,
                "dropped": self.dropped}


@dataclass
class AlignResult:
    """The outcome of an alignment. parent: the parent's id; child: the child's id (None when no
    candidate beat the parent on dev, or none could be run); kind: ``binary`` or ``graded``;
    split: counts per part; data_sha256: the data file's SHA-256 (None for in-memory data);
    parent_dev: the parent's dev figures;
    chosen: the chosen candidate's name; test: the one comparison on the test split; files: the
    files written (child spec first); stopped: why the ``max_cost`` budget stopped it (then
    `resume` continues); notes: what was skipped and why; prompt_diff: the child's prompt against the
    parent's; rejected: why the chosen candidate was not adopted (None: adopted, or none chosen),
    then its files are under ``OUT/rejected/``."""

    parent: str
    child: str | None
    kind: str
    seed: int
    split: dict[str, int]
    data_sha256: str | None = None
    parent_dev: Figures | None = None
    candidates: list[Candidate] = field(default_factory=list)
    chosen: str | None = None
    test: TestComparison | None = None
    files: list[Path] = field(default_factory=list)
    cost_usd: float | None = None
    judge_calls: int = 0
    stopped: str | None = None
    notes: list[str] = field(default_factory=list)
    prompt_diff: str | None = None  # the child's prompt against the parent's (unified diff; None: unchanged)
    rejected: str | None = None

    def to_json_dict(self) -> dict[str, Any]:
        return {"parent": self.parent, "child": self.child, "kind": self.kind, "seed": self.seed,
                "split": dict(self.split), "dataSha256": self.data_sha256,
                "parentDev": self.parent_dev.to_json_dict() if self.parent_dev else None,
                "candidates": [c.to_json_dict() for c in self.candidates], "chosen": self.chosen,
                "test": self.test.to_json_dict() if self.test else None, "files": [str(f) for f in self.files],
                "costUsd": self.cost_usd, "judgeCalls": self.judge_calls, "stopped": self.stopped,
                "notes": list(self.notes), "promptDiff": self.prompt_diff,
                "adopted": self.child is not None, "rejected": self.rejected}
