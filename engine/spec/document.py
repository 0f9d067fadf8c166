"""The document phase: a spec file as plain values, each with the place it was written.

Between YAML and compile sits a `Document`: the spec's values (plain dicts, lists, scalars),
and for every key path (``stages[1].output_schema.properties``) a `Position` that names the
*file* as well as the line and column — so values merged from several files (a spec that
extends another) still point at the file that wrote them. `Document.hash` digests the sources
together with every template the compiled spec uses: the provenance every result records.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..core.errors import Problem, SpecError
from .catalog import prompt_dirs
from .yamlload import load_yaml


@dataclass(frozen=True, slots=True)
class Position:
    """Where a value was written: its file, 1-based line and column (0 when unknown), and `path`,
    the key path as that file writes it (``stages[0].id`` in a child spec whose first stage is
    the merged spec's third; ``""`` when unknown). Positions compare by place, not by path."""

    file: str
    line: int = 0
    column: int = 0
    path: str = field(default="", compare=False)


@dataclass
class Document:
    """One spec as plain values with positions.

    path: the spec file (its stem is the spec's id). data: the parsed mapping (None when the
    YAML could not be read). positions: key path → `Position`. bool_like: key paths of unquoted
    scalars YAML 1.1 would read as booleans (for hints). problems: what loading found.
    sources: (file, text) of every file the document was built from, child first.
    prompt_dirs: where its templates resolve, in order. chain: the spec ids from this one up
    through the specs it extends (`engine.spec.inherit`).
    """

    path: Path
    data: Any
    positions: dict[str, Position] = field(default_factory=dict)
    bool_like: set[str] = field(default_factory=set)
    problems: list[Problem] = field(default_factory=list)
    sources: tuple[tuple[str, str], ...] = ()
    prompt_dirs: tuple[Path, ...] = ()
    chain: tuple[str, ...] = ()

    @property
    def file(self) -> str:
        return str(self.path)

    def position(self, key_path: str) -> Position:
        """The position of `key_path`, or of its nearest written ancestor; the document's own
        file with no line when nothing on the way was written."""
        return self._nearest(key_path)[1]

    def _nearest(self, key_path: str) -> tuple[str, Position]:
        """(the nearest written ancestor of `key_path`, or itself; its position)."""
        path = key_path
        while True:
            found = self.positions.get(path)
            if found is not None:
                return path, found
            if not path:
                return "", Position(self.file)
            cut = max(path.rfind("."), path.rfind("["))
            path = path[:cut] if cut > 0 else ""

    def written(self, key_path: str) -> str:
        """`key_path` of the merged spec as the file that wrote it (or its nearest written
        ancestor) writes it: ``stages[2].temprature`` → ``stages[0].temprature`` when the child's
        first stage is merged third. Unchanged in a spec that extends none."""
        ancestor, where = self._nearest(key_path)
        if not ancestor or not where.path:
            return key_path
        return where.path + key_path[len(ancestor):]

    def add(self, code: str, key_path: str, message: str, hint: str = "", *, at: str | None = None) -> None:
        """Record a problem about `key_path`, located at `at` (default: the key path itself) or
        its nearest written ancestor, in the file that wrote it; the problem names the key path
        as that file writes it (`written`)."""
        where = self.position(at if at is not None else key_path)
        self.problems.append(Problem(code, message, where.file, where.line, where.column, self.written(key_path), hint))

    def hash(self, templates: Mapping[str, str]) -> str:
        """sha256 (hex) of every source file's text and every template's name and text."""
        digest = hashlib.sha256()
        for i, (_, text) in enumerate(self.sources):
            if i:
                digest.update(b"\0\0")
            digest.update(text.encode("utf-8"))
        for name in sorted(templates):
            digest.update(b"\0" + name.encode() + b"\0" + templates[name].encode("utf-8"))
        return digest.hexdigest()


def parse_document(text: str, path: Path) -> Document:
    """The document of spec source `text`, as if read from `path`. Never raises: YAML
    problems are in `.problems` (and `.data` is None when nothing could be read)."""
    file = str(path)
    loaded = load_yaml(text, file)
    positions = {key: Position(file, line, col, key) for key, (line, col) in loaded.positions.items()}
    spec_id = loaded.data.get("id") if isinstance(loaded.data, dict) else None
    return Document(path, loaded.data, positions, loaded.bool_like, list(loaded.problems), ((file, text),),
                    tuple(prompt_dirs(path)), (spec_id if isinstance(spec_id, str) else path.stem,))


def read_document(path: Path) -> Document:
    """Read and parse a spec file. Raises `SpecError` (codes ``encoding``, ``unreadable``)
    when the file cannot be read as UTF-8 text."""
    file = str(path)
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise SpecError([Problem("encoding", f"not UTF-8 text: {exc.reason} at byte {exc.start}", file, 1, 1)]) from None
    except OSError as exc:
        raise SpecError([Problem("unreadable", f"cannot read: {exc.strerror or exc}", file)]) from None
    return parse_document(text, path)


__all__ = ["Document", "Position", "parse_document", "read_document"]
