"""The files ``align`` writes: the work folder (``OUT/.scorespec-align/NAME/``: each candidate as a
spec and its prompt, and ``state.json`` for ``resume``), and the child in the layout ``scorespec
new`` uses — ``OUT/scorer_specs/NAME.yaml`` (extending the parent, under a comment block with the
data's SHA-256, the split and the figures) and ``OUT/prompts/NAME/`` — with ``OUT/NAME.align.json``,
the JSON record of every candidate and of the test comparison. A chosen candidate that is not
adopted is written in the same layout under ``OUT/rejected/``, where no catalogue looks."""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..spec.catalog import builtin_specs_dir

__all__ = ["WorkFolder", "data_sha256", "parent_ref", "state_file"]

WORK = ".scorespec-align"


def state_file(out_dir: Path, name: str) -> Path:
    """The work folder's record of an alignment named `name` under `out_dir` (what ``resume`` reads)."""
    return Path(out_dir) / WORK / name / "state.json"


def data_sha256(data: Any) -> str | None:
    """The SHA-256 of a data file (hex), None for data that is not a file."""
    if isinstance(data, (str, os.PathLike)) and Path(data).is_file():
        digest = hashlib.sha256()
        with open(data, "rb") as handle:
            for block in iter(lambda: handle.read(1 << 20), b""):
                digest.update(block)
        return digest.hexdigest()
    return None


def parent_ref(parent_file: Path, child_dir: Path) -> str:
    """How a child in `child_dir` names its parent: the id of a built-in, else the path relative to
    the child's folder."""
    parent_file = Path(parent_file).resolve()
    if parent_file.parent == builtin_specs_dir().resolve():
        return parent_file.stem
    return Path(os.path.relpath(parent_file, child_dir.resolve())).as_posix()


def _fmt(value: Any) -> str:
    return "—" if value is None else f"{value:.3f}" if isinstance(value, float) else str(value)


class WorkFolder:
    """The work folder of one alignment, and where its child goes. Raises `FileExistsError` when
    the child spec exists (unless `resume`), `ValueError` on resume from other data, seed or parent."""

    def __init__(self, out_dir: Path, name: str, parent: Any, sha256: str | None, settings: Any, resume: bool):
        self.out_dir, self.name, self.sha256 = Path(out_dir), name, sha256
        self.path = self.out_dir / WORK / name
        self.parent_file = Path(parent.plan.path)
        self.child_spec = self.out_dir / "scorer_specs" / f"{name}.yaml"
        self.rejected_dir = self.out_dir / "rejected"
        if self.child_spec.exists() and not resume:
            raise FileExistsError(f"not overwriting {self.child_spec} (give another --name, or --resume)")
        identity = {"parent": parent.id, "dataSha256": sha256, "seed": settings.seed,
                    "fractions": list(settings.fractions)}
        state_file = self.path / "state.json"
        self.resumed = resume and state_file.is_file()  # False: a resume with nothing to resume starts afresh
        self.state: dict[str, Any] = {**identity, "proposals": None}
        if resume and state_file.is_file():
            kept = json.loads(state_file.read_text(encoding="utf-8"))
            differs = [k for k in identity if kept.get(k) != identity[k]]
            if differs:
                raise ValueError(f"--resume: {state_file} is an alignment of other {', '.join(differs)}; run without "
                                 "--resume, or with the same data, seed and parent")
            self.state = kept
        else:
            self.save()  # a later resume finds this alignment even before any proposal is kept

    @property
    def spent(self) -> float:
        """US dollars the alignment's earlier attempts spent (0 for a new one)."""
        return float(self.state.get("spentUsd") or 0.0)

    def keep_spent(self, spent: float) -> None:
        """Keep what the alignment has spent so far, in US dollars, for a later ``--resume``."""
        self.state["spentUsd"] = spent
        self.save()

    def save(self) -> None:
        self.path.mkdir(parents=True, exist_ok=True)
        (self.path / "state.json").write_text(json.dumps(self.state, indent=1, ensure_ascii=False), encoding="utf-8")

    def write_candidate(self, cand: str, spec_text: str, prompt: tuple[str, str] | None) -> Path:
        """Write a candidate's spec (and its prompt: name under prompts/, text); its spec path."""
        spec = self.path / "scorer_specs" / f"{cand}.yaml"
        spec.parent.mkdir(parents=True, exist_ok=True)
        spec.write_text(spec_text, encoding="utf-8")
        if prompt is not None:
            target = self.path / "prompts" / prompt[0]
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(prompt[1], encoding="utf-8")
        return spec

    def write_child(self, result: Any, chosen: Any, recipe: Mapping[str, Any], data: Any,
                    adopted: bool = True) -> list[Path]:
        """Write the child spec, its prompt and the JSON record (under ``rejected/`` when not
        `adopted`); the files written, spec first."""
        from .candidates import child_spec

        root = self.out_dir if adopted else self.rejected_dir
        spec_file = root / "scorer_specs" / f"{self.name}.yaml"
        comment = self.comment(result, chosen, data)
        if not adopted:
            comment = [f"REJECTED by scorespec align, not adopted: {result.rejected}.", *comment]
        prompt = recipe.get("prompt_text")
        prompt_name = f"{self.name}/{recipe['prompt_file']}" if prompt is not None else None
        text = child_spec(self.name, parent_ref(self.parent_file, spec_file.parent), recipe["title"], comment,
                          stage=recipe.get("stage"), prompt=prompt_name, examples=recipe.get("examples"),
                          cutoff=recipe.get("cutoff"), scoring=recipe.get("scoring"))
        spec_file.parent.mkdir(parents=True, exist_ok=True)
        spec_file.write_text(text, encoding="utf-8")
        files = [spec_file]
        if prompt_name is not None:
            target = root / "prompts" / prompt_name
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(prompt, encoding="utf-8")
            files.append(target)
        record = root / f"{self.name}.align.json"
        files.append(record)
        result.files = files
        record.write_text(json.dumps(result.to_json_dict(), indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
        return files

    def comment(self, result: Any, chosen: Any, data: Any) -> list[str]:
        """The child spec's comment block: where it came from and the figures behind it."""
        source = data if isinstance(data, (str, os.PathLike)) else "data given in memory"
        split = result.split
        lines = [f"Written by scorespec align from {result.parent} and the labels of {source}",
                 f"(SHA-256 {result.data_sha256 or '—'}).",
                 f"Split: seed {result.seed}, train {split['train']} / dev {split['dev']} / test {split['test']} items, "
                 "stratified by label.",
                 f"Chosen on dev: {chosen.name} ({chosen.strategy}): {chosen.change}"]
        key = "spearman" if result.kind == "graded" else "balanced_accuracy"
        name = "Spearman" if result.kind == "graded" else "balanced accuracy"
        parent_dev = getattr(result.parent_dev, key, None) if result.parent_dev else None
        lines.append(f"Dev: {name} {_fmt(getattr(chosen.dev, key, None))} (parent {_fmt(parent_dev)}), "
                     f"ROC AUC {_fmt(chosen.dev.roc_auc if chosen.dev else None)}.")
        test = result.test
        if test is not None:
            lines.append(f"Test: {name} {_fmt(getattr(test.child, key))} (parent {_fmt(getattr(test.parent, key))}), "
                         f"ROC AUC {_fmt(test.child.roc_auc)} (parent {_fmt(test.parent.roc_auc)}), "
                         f"n {test.child.n}, p {_fmt(test.p_value)}.")
            lines.append(test.words[0].upper() + test.words[1:] + ".")
        return lines
