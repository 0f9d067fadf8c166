"""A spec version as a run used it, kept in the store: shown, and written out to run again.

Every run keeps, per label, its spec's full text (`engine.run.store.Store.record_spec`, by spec
hash): the source of every spec file merged into it (the spec's own first, then what it
extends) and every template it used. From that text alone — whatever the files on disk say now —
`merged_document` rebuilds the merged spec, `resolved_text` prints it value by value with the
file and line that wrote each (as ``scorespec render --resolved`` does), and `write_snapshot`
writes a standalone copy (the merged spec, with no ``extends``, and its templates) that runs as
the version the run used: ``scorespec show RUN --spec LABEL [--write DIR]``. `compile_kept`
compiles the kept text itself, its hash checked: how a Ray actor rebuilds a run's scorers
from text rather than from pickled objects (`engine.bind.recipe`).

Rule functions are code, not spec text: a copy runs with the functions installed now.
"""

from __future__ import annotations

import tempfile
from collections.abc import Mapping
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Any

from ..core.errors import UserError
from .document import Document, parse_document
from .inherit import merge
from .resolved import render_resolved

if TYPE_CHECKING:
    from .plans import ScorerPlan

__all__ = ["SpecHashMismatch", "SpecNotKept", "compile_kept", "run_spec", "merged_document", "resolved_text",
           "write_snapshot"]


class SpecHashMismatch(UserError, ValueError):
    """Kept spec text that does not compile to the spec hash it was kept under."""


class SpecNotKept(UserError, LookupError):
    """The store has no text for a run's label (an unknown label, or a run recorded before spec
    texts were kept); the message says which."""


def run_spec(db: Any, run: Mapping[str, Any], label: str) -> dict[str, Any]:
    """The kept spec of `label` in `run` (a run as `Store.get_run` gives it): see `Store.spec`.
    Raises `SpecNotKept` naming the run's labels, or saying the text was not kept."""
    labels = (run.get("config") or {}).get("labels") or {}
    if label not in labels:
        known = ", ".join(labels) or ", ".join(run.get("scorers") or []) or "none"
        raise SpecNotKept(f"run {run['run_id']} has no scorer labelled {label!r} (its labels: {known})")
    spec_hash = labels[label].get("specHash")
    found = db.spec(spec_hash) if spec_hash else None
    if found is None:
        raise SpecNotKept(f"run {run['run_id']}: the text of {label}'s spec (hash {str(spec_hash)[:12]}) is not in "
                          "this store (runs recorded before spec texts were kept have none)")
    return found


def merged_document(kept: Mapping[str, Any]) -> Document:
    """The merged spec rebuilt from a kept spec's sources (the spec's own file first): each file
    parsed from its kept text, merged from the root down, with positions in the original files."""
    sources = [(str(file), str(text)) for file, text in kept["sources"]]
    docs = [parse_document(text, Path(file)) for file, text in sources]
    merged = docs[-1]
    for child in reversed(docs[:-1]):
        merged = merge(merged, child)
    return merged


def resolved_text(kept: Mapping[str, Any]) -> str:
    """The kept spec merged (see `merged_document`) as YAML, each value with ``# FILE:LINE``,
    then each template under a ``# ===== template NAME =====`` line."""
    parts = [render_resolved(merged_document(kept))]
    for name, text in sorted(kept["templates"].items()):
        parts.append(f"# ===== template {name} =====\n{text}" + ("" if text.endswith("\n") else "\n"))
    return "\n".join(parts)


def write_snapshot(kept: Mapping[str, Any], folder: Path) -> Path:
    """Write the kept spec as a standalone spec under `folder`: ``scorer_specs/ID.yaml`` (the
    merged values, no ``extends``) and each template under ``prompts/`` (where that spec's
    templates resolve first). Returns the spec file's path. Raises `FileExistsError` when the
    spec file exists, `ValueError` for a template name that would leave `folder`."""
    doc = merged_document(kept)
    spec_id = doc.data.get("id") if isinstance(doc.data, dict) else None
    if not isinstance(spec_id, str):
        raise ValueError("the kept spec has no id")
    target = folder / "scorer_specs" / f"{spec_id}.yaml"
    if target.exists():
        raise FileExistsError(f"{target} exists; choose another folder")
    templates = _template_files(kept["templates"], folder)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(render_resolved(doc), encoding="utf-8")
    for path, text in templates.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return target


def _template_files(templates: Mapping[str, Any], folder: Path) -> dict[Path, str]:
    """Where each kept template goes under `folder` (``prompts/NAME``); `ValueError` for a name
    that would leave it."""
    files: dict[Path, str] = {}
    for name, text in templates.items():
        rel = PurePosixPath(name)
        if rel.is_absolute() or ".." in rel.parts:
            raise ValueError(f"template name {name!r} leaves the folder")
        files[folder / "prompts" / Path(*rel.parts)] = str(text)
    return files


def compile_kept(kept: Mapping[str, Any], spec_hash: str | None = None) -> ScorerPlan:
    """The compiled spec of a kept version (``{sources, templates}``, as `Store.spec` gives it):
    its sources merged (`merged_document`) and its templates taken from `templates` alone,
    whatever the files on this machine say. With `spec_hash`, the result must have that hash.

    Raises `engine.core.errors.SpecError` when the text does not compile here (e.g. a rule function
    not installed), `SpecHashMismatch` when it compiles to another hash, `ValueError` for a
    template name that would leave its folder."""
    from .compile import compile_document

    doc = merged_document(kept)
    with tempfile.TemporaryDirectory(prefix="scorespec-kept-") as folder:
        for path, text in _template_files(kept["templates"], Path(folder)).items():
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
        doc.prompt_dirs = (Path(folder) / "prompts",)
        plan = compile_document(doc)
    if spec_hash is not None and plan.hash != spec_hash:
        raise SpecHashMismatch(f"{plan.id}: the kept spec text compiles to hash {plan.hash[:12]}, not "
                               f"{spec_hash[:12]} (a template or a file it extends differs)")
    return plan
