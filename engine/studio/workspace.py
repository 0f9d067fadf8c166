"""The folder the studio serves: its specs, prompts and datasets, and the built-in catalogue.

A path the API is given is relative to the folder (`Workspace.path`); one that resolves outside
it (``..``, an absolute path elsewhere, a link leading out) is refused with `OutsideFolder`. A
built-in file is named ``builtin:scorer_specs/ID.yaml`` or ``builtin:prompts/…`` and can be read,
never written. Saving a file writes it, then validates what it touches at once (`problems_after`):
a spec, that spec; a prompt, every local spec. A problem is ``{file, line, col, message, code,
severity, text}``: ``text`` is the line ``scorespec validate`` prints, ``message`` that line after
its ``file:line:col:``, ``file`` relative to the folder.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

from ..core.errors import Problem, UserError
from ..spec.catalog import builtin_root, list_specs, prompt_dirs

__all__ = ["BUILTIN", "DATA_SUFFIXES", "OutsideFolder", "ReadOnly", "Workspace", "problem_json"]

BUILTIN = "builtin:"
DATA_SUFFIXES = (".jsonl", ".csv", ".tsv", ".json")
_SKIPPED = {".git", ".scorespec", "node_modules", "__pycache__", ".venv", "venv"}


class OutsideFolder(UserError, PermissionError):
    """A path that is not inside the studio's folder."""


class ReadOnly(UserError, PermissionError):
    """A file the studio may read but not write (a built-in one)."""


class Workspace:
    """The folder `root` (made absolute) and what the studio reads and writes there."""

    def __init__(self, root: Path | str):
        self.root = Path(root).resolve()
        if not self.root.is_dir():
            raise UserError(f"{root}: no such folder")

    def path(self, text: str, *, write: bool = False) -> Path:
        """The absolute file `text` names (relative to the folder, or ``builtin:…``). Raises
        `OutsideFolder` for a path outside the folder (or the built-in one), `ReadOnly` for a
        built-in file with `write`."""
        if text.startswith(BUILTIN):
            if write:
                raise ReadOnly(f"{text}: a built-in file cannot be changed (write a spec that extends it)")
            base, rest = builtin_root().resolve(), text[len(BUILTIN):]
        else:
            base, rest = self.root, text
        found = (base / rest).resolve()
        if found != base and base not in found.parents:
            raise OutsideFolder(f"{text}: outside the folder {base}")
        return found

    def name(self, path: Path) -> str:
        """How the API names `path`: relative to the folder, or ``builtin:…``, else as it is."""
        path = Path(path).resolve()
        for base, prefix in ((self.root, ""), (builtin_root().resolve(), BUILTIN)):
            if path == base or base in path.parents:
                return prefix + path.relative_to(base).as_posix()
        return str(path)

    def read(self, text: str) -> str:
        """The text of the file `text` names; `FileNotFoundError` when there is none."""
        return self.path(text).read_text(encoding="utf-8")

    def save(self, text: str, content: str) -> list[dict[str, Any]]:
        """Write `content` to the file `text` names (folders made as needed), then its problems."""
        path = self.path(text, write=True)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(content, encoding="utf-8")
        return self.problems_after(path)

    def problems_after(self, path: Path) -> list[dict[str, Any]]:
        """The problems a saved file shows: a spec's own (with its warnings), or for any other
        file those of every local spec (each once, in file order)."""
        from ..spec.compile import validate_specs

        specs = self.root / "scorer_specs"
        if path.suffix == ".yaml" and path.parent == specs:
            targets = [path]
        else:
            targets = [specs] if specs.is_dir() else []
        found = validate_specs(targets, warnings=True)
        problems = sorted({p: None for ps in found.values() for p in ps},
                          key=lambda p: (p.file, p.line, p.column, p.key_path, p.code))
        return [problem_json(p, self) for p in problems]

    def specs(self) -> list[dict[str, Any]]:
        """Every spec the folder sees, by id: ``{id, path, origin (local | builtin), abstract,
        shadowsBuiltin}``, local ones first."""
        entries = [{"id": e.id, "path": self.name(e.path), "origin": e.origin, "abstract": e.abstract,
                    "shadowsBuiltin": e.shadows_builtin} for e in list_specs(self.root)]
        return sorted(entries, key=lambda e: (e["origin"] != "local", e["id"]))

    def spec_files(self, spec: str) -> dict[str, Any]:
        """A spec's files: ``{id, path, prompts: [path…], problems}``, its prompts those its
        compiled plan uses (none when it does not compile: its problems say why). Raises
        `FileNotFoundError` for an unknown spec."""
        from ..core.errors import SpecError
        from ..spec.catalog import resolve_spec
        from ..spec.compile import compile_file

        file = resolve_spec(spec if not spec.startswith(BUILTIN) else str(self.path(spec)), self.root).resolve()
        try:
            plan = compile_file(file)
        except SpecError as exc:
            return {"id": file.stem, "path": self.name(file), "prompts": [],
                    "problems": [problem_json(p, self) for p in exc.problems]}
        prompts = []
        for name in sorted(plan.templates):
            where = next((d / name for d in prompt_dirs(file) if (d / name).is_file()), None)
            if where is not None:
                prompts.append(self.name(where))
        return {"id": plan.id, "path": self.name(file), "prompts": prompts, "problems": []}

    def datasets(self) -> list[str]:
        """The folder's dataset files (JSONL, CSV, TSV, JSON; not a labels file), by path."""
        found = []
        for path in sorted(self.root.rglob("*")):
            parts = path.relative_to(self.root).parts
            if any(part in _SKIPPED or part.startswith(".") for part in parts[:-1]):
                continue
            if parts[0] in ("scorer_specs", "prompts") or not path.is_file():
                continue
            if path.suffix in DATA_SUFFIXES and not path.name.endswith(".labels.jsonl"):
                found.append(self.name(path))
        return found


def problem_json(problem: Problem, workspace: Workspace) -> dict[str, Any]:
    """A `Problem` as the API gives it (see the module docstring)."""
    shown = dataclasses.replace(problem, file=workspace.name(Path(problem.file)) if problem.file else "")
    text = shown.render()
    where = (shown.file or "<spec>") + (f":{shown.line}:{shown.column or 1}" if shown.line else "")
    return {"file": shown.file, "line": shown.line, "col": shown.column or (1 if shown.line else 0),
            "message": text[len(where) + 2:], "code": shown.code, "severity": shown.severity, "text": text}
