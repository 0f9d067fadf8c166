"""`extends:` — a spec built on another, overriding only what it changes.

A child document is merged over its parent's (itself possibly a child: chains resolve from the
root down) before the spec is validated, so every check of the compiler runs on the merged
result, and every value keeps the position of the file that wrote it:

- mappings merge key by key; a key set to ``null`` removes the parent's value;
- ``stages`` merge by id (a child stage with a parent's id merges into that stage; a new id is
  added last, or right after the stage named by its ``after:``); a stage's ``checks`` and the
  spec's ``reason`` cases merge the same way when the child gives them ids, and are replaced
  whole when it gives none; every other list is replaced whole;
- ``abstract`` and ``notes`` are not inherited; templates resolve from the child's ``prompts/`` first, then
  each parent's; the merged document's hash covers every file of the chain.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..core.errors import Problem, SpecError
from .catalog import (
    builtin_prompts_dir,
    builtin_specs_dir,
    is_file,
    is_path,
    prompt_dirs,
    resolve_spec,
    shown_name,
    too_long,
)
from .document import Document, Position, read_document

KEYED_LISTS = {"stages": True, "checks": False, "reason": False}
"""Lists merged by item id; True where items always have ids (else a child list without ids
replaces the parent's whole)."""


def _parent_path(value: Any, child: Document) -> Path | None:
    """The file `extends: value` names, or None (a problem is recorded in `child`)."""
    if not isinstance(value, str) or not value.strip():
        child.add("wrong-type", "extends", "extends names a spec: a built-in id or a path to a YAML file",
                  "e.g. extends: faithfulness")
        return None
    if is_path(value):
        why = too_long(value)
        if why is not None:
            child.add("unknown-parent", "extends", f"spec file {shown_name(value)!r} not found: the name is {why}")
            return None
        path = (child.path.parent / value).resolve() if not Path(value).is_absolute() else Path(value)
        if not is_file(path):
            child.add("unknown-parent", "extends", f"spec file {value!r} not found", f"looked for {path}")
            return None
        return path
    try:
        path = resolve_spec(value, cwd=child.path.resolve().parent.parent)
    except FileNotFoundError as exc:
        child.add("unknown-parent", "extends", str(exc))
        return None
    if path.resolve() == child.path.resolve():  # a local spec extending the built-in it shadows
        path = builtin_specs_dir() / f"{value}.yaml"
        if not path.is_file():
            child.add("extends-cycle", "extends", f"{child.file} extends itself")
            return None
    return path


def load_document(path: Path, _seen: tuple[Path, ...] = ()) -> Document:
    """Read a spec file and resolve what it extends (see `resolve_extends`). Raises `SpecError`
    for a file that cannot be read and for a cycle."""
    return resolve_extends(read_document(path), _seen)


def _shown(path: Path) -> str:
    """`path` relative to the current folder when it lies under it, as other problems name files."""
    try:
        return str(path.relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(path)


def resolve_extends(doc: Document, _seen: tuple[Path, ...] = ()) -> Document:
    """`doc` merged over the spec it extends (recursively), or `doc` itself when it extends none.

    Raises `SpecError` (code ``extends-cycle``) naming the files of a cycle, and for a parent
    file that cannot be read. Other problems (a parent that is not found, problems inside a
    parent) are in the returned document's `problems`, at the file and line that wrote them.
    """
    key = doc.path.resolve()
    if key in _seen:
        chain = " → ".join(_shown(p) for p in (*_seen, key))
        where = doc.position("extends")
        raise SpecError([Problem("extends-cycle", f"specs extend each other in a cycle: {chain}", where.file,
                                 where.line, where.column, "extends",
                                 "a spec cannot extend itself through the specs it extends")])
    if not isinstance(doc.data, dict) or "extends" not in doc.data:
        return doc
    parent_path = _parent_path(doc.data["extends"], doc)
    if parent_path is None:
        return doc
    parent = load_document(parent_path, (*_seen, key))
    return merge(parent, doc)


# --- merging ---------------------------------------------------------------------------------


def _join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def _suffix(path: str, root: str) -> str | None:
    """`path` relative to `root` (``""``, ``".key…"`` or ``"[i]…"``), or None outside it."""
    if not root:
        return "." + path if path else ""
    if path == root:
        return ""
    if path.startswith((root + ".", root + "[")):
        return path[len(root):]
    return None


def _rejoin(root: str, suffix: str) -> str:
    return root + suffix if root else suffix.lstrip(".")


def _item_id(item: Any) -> str | None:
    """A keyed list item's id, or None when it has none that can key it (a non-text id is left to
    the spec's validation to report, never a crash of the merge)."""
    value = item.get("id") if isinstance(item, dict) else None
    return value if isinstance(value, str) else None


class _Merger:
    """Merges two documents' values, re-keying each value's position under its merged path."""

    def __init__(self, parent: Document, child: Document):
        self.parent, self.child = parent, child
        self.positions: dict[str, Position] = {}
        self.bool_like: set[str] = set()
        self.problems: list[Problem] = []

    def take(self, doc: Document, old: str, new: str) -> None:
        """Copy the positions (and YAML 1.1 boolean flags) of `doc`'s subtree at `old` to `new`."""
        for path, where in doc.positions.items():
            suffix = _suffix(path, old)
            if suffix is not None:
                self.positions[_rejoin(new, suffix)] = where
        for path in doc.bool_like:
            suffix = _suffix(path, old)
            if suffix is not None:
                self.bool_like.add(_rejoin(new, suffix))

    def value(self, p: Any, ppath: str, c: Any, cpath: str, out: str, key: str | None) -> Any:
        if isinstance(p, dict) and isinstance(c, dict):
            return self.mapping(p, ppath, c, cpath, out)
        if key in KEYED_LISTS and isinstance(p, list) and isinstance(c, list):
            ids_always = KEYED_LISTS[key]
            if ids_always or any(isinstance(item, dict) and "id" in item for item in c):
                return self.keyed(p, ppath, c, cpath, out)
        self.take(self.child, cpath, out)
        return c

    def mapping(self, p: dict, ppath: str, c: dict, cpath: str, out: str) -> dict:
        where = self.child.positions.get(cpath) or self.parent.positions.get(ppath)
        if where is not None:
            self.positions[out] = where
        merged: dict[str, Any] = {}
        for key, value in p.items():
            if key not in c:
                merged[key] = value
                self.take(self.parent, _join(ppath, key), _join(out, key))
        for key, value in c.items():
            if value is None and key in p:
                continue  # null removes the parent's value
            if key in p:
                merged[key] = self.value(p[key], _join(ppath, key), value, _join(cpath, key), _join(out, key), key)
            else:
                merged[key] = value
                self.take(self.child, _join(cpath, key), _join(out, key))
        return {k: merged[k] for k in [*p, *c] if k in merged}

    def keyed(self, p: list, ppath: str, c: list, cpath: str, out: str) -> list:
        """Items merged by id; new ones placed last or after the item their ``after:`` names."""
        order: list[tuple[int | None, int | None]] = [(i, None) for i in range(len(p))]
        ids = {_item_id(item): i for i, item in enumerate(p) if _item_id(item) is not None}
        placed: dict[tuple[int | None, int | None], Any] = {}  # entry → the id it was placed after
        given: set[Any] = set()
        for j, item in enumerate(c):
            item_id = _item_id(item)
            if item_id is not None and item_id in given:  # the second would silently undo the first
                where = self.child.position(f"{cpath}[{j}].id")
                self.problems.append(Problem("duplicate-id", f"id {item_id!r} is given twice in this list",
                                             where.file, where.line, where.column, f"{cpath}[{j}].id",
                                             "merge the two entries into one"))
                continue
            given.add(item_id)
            after = item.get("after") if isinstance(item, dict) else None
            entry: tuple[int | None, int | None] = (None, j)
            if item_id is not None and item_id in ids:
                slot = next(k for k, (pi, _) in enumerate(order) if pi == ids[item_id])
                entry = (ids[item_id], j)
                if after is None:
                    order[slot] = entry
                    continue
                order.pop(slot)
            at = self._slot(order, p, c, after, f"{cpath}[{j}].after")
            while after is not None and at < len(order) and placed.get(order[at]) == after:
                at += 1  # after the items already placed after the same id, in the child's order
            order.insert(at, entry)
            placed[entry] = after
        merged = []
        for k, (pi, cj) in enumerate(order):
            here = f"{out}[{k}]"
            if pi is not None and cj is not None:
                value = self.mapping(p[pi], f"{ppath}[{pi}]", c[cj], f"{cpath}[{cj}]", here)
            elif pi is not None:
                value = p[pi]
                self.take(self.parent, f"{ppath}[{pi}]", here)
            else:
                value = c[cj]
                self.take(self.child, f"{cpath}[{cj}]", here)
            if isinstance(value, dict) and "after" in value:
                value = {k2: v for k2, v in value.items() if k2 != "after"}
            merged.append(value)
        return merged

    def _slot(self, order: list[tuple[int | None, int | None]], p: list, c: list, after: Any, key_path: str) -> int:
        """Where a placed item goes: after the last item placed after `after` (or at the end)."""
        if after is None:
            return len(order)

        def item_id(entry: tuple[int | None, int | None]) -> Any:
            pi, cj = entry
            source = c[cj] if cj is not None else p[pi]  # type: ignore[index]
            return source.get("id") if isinstance(source, dict) else None

        found = [k for k, entry in enumerate(order) if item_id(entry) == after]
        if not found:
            known = [str(item_id(entry)) for entry in order if item_id(entry) is not None]
            where = self.child.position(key_path)
            self.problems.append(Problem("unknown-after", f"after: no item with id {after!r} to place this after",
                                         where.file, where.line, where.column, key_path,
                                         "expected one of: " + ", ".join(known)))
            return len(order)
        return found[0] + 1


NOT_INHERITED = ("abstract", "notes")
"""Top-level keys a spec never takes from the spec it extends."""


def merge(parent: Document, child: Document) -> Document:
    """`child` (which has ``extends:``) merged over `parent`; see the module docstring."""
    merger = _Merger(parent, child)
    child_data = {k: v for k, v in child.data.items() if k != "extends"}
    if isinstance(parent.data, dict):  # `abstract` and `notes` are not inherited
        data = merger.mapping({k: v for k, v in parent.data.items() if k not in NOT_INHERITED}, "", child_data, "", "")
    else:  # the parent could not be read: its problems say why
        data = child_data
        merger.take(child, "", "")
    dirs = list(prompt_dirs(child.path))
    for folder in parent.prompt_dirs:
        if folder not in dirs:
            dirs.append(folder)
    builtin = builtin_prompts_dir().resolve()  # the built-in prompts stay last
    if builtin in dirs:
        dirs.remove(builtin)
        dirs.append(builtin)
    return Document(
        path=child.path, data=data, positions=merger.positions, bool_like=merger.bool_like,
        problems=[*parent.problems, *child.problems, *merger.problems],
        sources=(*child.sources, *parent.sources), prompt_dirs=tuple(dirs),
        chain=(*child.chain[:1], *parent.chain),
    )


__all__ = ["load_document", "resolve_extends", "merge", "KEYED_LISTS"]
