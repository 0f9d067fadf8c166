"""Document → `Spec`: the spec format's pydantic validation, with every problem placed.

pydantic reports locations as tuples (``('stages', 1, 'prompt', 'temprature')``); here they
become key paths (``stages[1].temprature``) located in the document, with did-you-mean hints
for unknown keys and a hint to quote YAML 1.1 booleans.
"""

from __future__ import annotations

import copy
import difflib
from typing import Any, Union, get_args, get_origin

from pydantic import BaseModel, ValidationError

from ..core.errors import did_you_mean
from .document import Document
from .models import CONCRETE_KEYS, PromptStage, RuleStage, Spec


def validate_document(doc: Document) -> Spec | None:
    """The document's `Spec`, or None when it cannot be built; problems go to `doc.problems`.

    When unknown keys are the only structural problems, the spec without them is returned, so
    compiling can go on and report the file's other problems in the same run.
    """
    data = doc.data
    if not isinstance(data, dict):
        doc.add("not-a-mapping", "", "a spec is a YAML mapping of keys (format, id, name, stages, …)")
        return None
    stem = doc.path.stem
    if isinstance(data.get("id"), str) and data["id"] != stem:
        doc.add("id-mismatch", "id", f"id {data['id']!r} differs from the file name",
                f"a spec's id is its file's stem: rename the file or set id: {stem}")
    try:
        spec = Spec.model_validate(data)
    except ValidationError as exc:
        _pydantic_problems(exc, doc)
        spec = _without_unknown_keys(data, exc)
    if spec is not None:
        _placement_and_completeness(spec, doc)
    return spec


def _placement_and_completeness(spec: Spec, doc: Document) -> None:
    """A spec that is not abstract gives every `CONCRETE_KEYS` (itself or through its parent);
    `after:` is left only where no parent placed the item (it places items of a child)."""
    if not spec.abstract and spec.extends is None:  # (still set: its parent was not found, which says why)
        for key in CONCRETE_KEYS:
            if getattr(spec, key) is None and not (key == "score" and (spec.scores or spec.label)):
                doc.add("missing-key", key, "required key is missing", "unless the spec is abstract: true", at="")
    lists = [(f"stages[{i}]", stage) for i, stage in enumerate(spec.stages or [])]
    lists += [(f"reason[{i}]", case) for i, case in enumerate(spec.reason)]
    for i, stage in enumerate(spec.stages or []):
        lists += [(f"stages[{i}].checks[{j}]", check) for j, check in enumerate(getattr(stage, "checks", []))]
    for key, item in lists:
        if item.after is not None:
            doc.add("invalid-value", f"{key}.after", "after: places an item of a spec that extends another",
                    "add extends: to this spec, or move the item where it should run")


def _unwrap(tp: Any) -> list[Any]:
    """The concrete types behind Annotated/Optional/Union."""
    origin = get_origin(tp)
    if origin is Union or str(origin) in {"typing.Union", "<class 'types.UnionType'>"}:
        return [t for arg in get_args(tp) for t in _unwrap(arg)]
    if str(origin) == "typing.Annotated" or hasattr(tp, "__metadata__"):
        return _unwrap(get_args(tp)[0])
    return [tp]


def _keys_at(loc: tuple[Any, ...]) -> list[str]:
    """Allowed keys of the model at `loc` (for did-you-mean on unknown keys)."""
    types: list[Any] = [Spec]
    for i, part in enumerate(loc):
        if _is_stage_tag(loc, i):  # the discriminator's tag, not the stage's `prompt` field
            types = [PromptStage] if part == "prompt" else [RuleStage]
            continue
        nxt: list[Any] = []
        for tp in types:
            for t in _unwrap(tp):
                if isinstance(t, type) and issubclass(t, BaseModel):
                    if isinstance(part, str) and part in t.model_fields:
                        nxt.append(t.model_fields[part].annotation)
                elif get_origin(t) in (list, dict):
                    args = get_args(t)
                    nxt.append(args[-1] if args else Any)
        types = nxt or types
    keys: set[str] = set()
    for tp in types:
        for t in _unwrap(tp):
            if isinstance(t, type) and issubclass(t, BaseModel):
                keys.update(f.alias or name for name, f in t.model_fields.items())
    return sorted(keys)


def _path(loc: tuple[Any, ...]) -> str:
    text = ""
    for part in loc:
        if isinstance(part, int):
            text += f"[{part}]"
        else:
            text += f".{part}" if text else str(part)
    return text


def _is_stage_tag(loc: tuple[Any, ...], i: int) -> bool:
    """Whether loc[i] is the stage union's tag (``stages[0].prompt``) that pydantic inserts."""
    return loc[i] in ("prompt", "rule") and i > 0 and isinstance(loc[i - 1], int) and "stages" in loc[: i - 1]


def _strip_tags(loc: tuple[Any, ...]) -> tuple[Any, ...]:
    return tuple(part for i, part in enumerate(loc) if not _is_stage_tag(loc, i))


def _pydantic_problems(exc: ValidationError, doc: Document) -> None:
    for err in exc.errors():
        loc = _strip_tags(tuple(err["loc"]))
        path = _path(loc)
        kind = err["type"]
        if kind == "extra_forbidden":
            hint = did_you_mean(str(loc[-1]), _keys_at(tuple(err["loc"][:-1])))
            doc.add("unknown-key", path, "unknown key", hint)
        elif kind == "missing":
            doc.add("missing-key", path, "required key is missing", at=_path(loc[:-1]))
        elif kind == "literal_error" and loc == ("format",):
            doc.add("format-version", path, f"unsupported format {err.get('input')!r}", "this engine reads format: 1")
        elif kind.endswith("_type") or kind.endswith("_parsing") or kind in ("model_type", "dict_type", "list_type"):
            hint = "quote it, or use true/false for a boolean" if path in doc.bool_like else ""
            got = type(err.get("input")).__name__
            doc.add("wrong-type", path, f"{err['msg'].lower()} (got {got})", hint)
        else:
            doc.add("invalid-value", path, err["msg"])


def _without_unknown_keys(data: dict[str, Any], exc: ValidationError) -> Spec | None:
    """The spec without its unknown keys when those are its only structural problems — an unknown
    key whose nearest allowed key is missing at the same place is read as that key (a typo:
    ``promt`` for ``prompt``), so the later phases still check its value — else None."""
    errors = exc.errors()
    missing = {_strip_tags(tuple(e["loc"])) for e in errors if e["type"] == "missing"}
    pruned = copy.deepcopy(data)
    for error in errors:
        if error["type"] != "extra_forbidden":
            continue
        node: Any = pruned
        loc = _strip_tags(tuple(error["loc"]))
        for part in loc[:-1]:
            node = node[part]
        value = node.pop(loc[-1], None)
        close = difflib.get_close_matches(str(loc[-1]), _keys_at(tuple(error["loc"][:-1])), n=1, cutoff=0.6)
        if close and loc[:-1] + (close[0],) in missing and close[0] not in node:
            node[close[0]] = value
            missing.discard(loc[:-1] + (close[0],))
    if missing or any(e["type"] not in ("extra_forbidden", "missing") for e in errors):
        return None
    try:
        return Spec.model_validate(pruned)
    except ValidationError:
        return None


__all__ = ["validate_document"]
