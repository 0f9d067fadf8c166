"""The options and the declared fields of a spec, compiled: `OptionsPlan` and `FieldPlan`s; the
score's scale under the default options, and the documented `cutoff` checked within it; a prompt
stage's worked `examples` checked against its output schema.

Part of `engine.spec.compile`: each option's schema is checked and its default validated; a
declared field's schema is checked, and an option of the same name must satisfy it.
"""

from __future__ import annotations

import math
from typing import Any

from ..core.schemas import OptionValidator, schema_error
from .document import Document
from .models import Spec
from .plans import FieldPlan, OptionsPlan
from .schema_keywords import misspelled

__all__ = ["checked_cutoff", "checked_examples", "declared_field", "options_plan"]


def options_plan(spec: Spec, doc: Document) -> OptionsPlan:
    """Every option's schema checked and its default validated; `scale` added (default 1)
    when the spec scores against `options.scale` without declaring it."""
    defaults: dict[str, Any] = {}
    validators: dict[str, OptionValidator] = {}
    for name, schema in spec.options.items():
        key = f"options.{name}"
        exc = schema_error(schema)
        if exc is not None:
            doc.add("option-schema", key, f"not a valid JSON Schema: {exc.message}")
            continue
        typos = list(misspelled(schema))
        for pointer, name, keyword in typos:
            doc.add("option-schema", ".".join((key, *map(str, pointer))), f"{name!r} is no JSON Schema keyword, "
                    "so it would be ignored", f"did you mean '{keyword}'?")
        if typos:
            continue
        if "default" not in schema:
            doc.add("option-default", key, "an option needs a default", "add default: …")
            continue
        validator = OptionValidator(schema)
        error = validator.error(schema["default"])
        if error is not None:
            hint = "quote it, or use true/false for a boolean" if f"{key}.default" in doc.positions and str(
                schema["default"]).lower() in {"yes", "no", "on", "off"} else ""
            doc.add("option-default", f"{key}.default", f"the default does not satisfy the option's schema: {error}",
                    hint)
        defaults[name] = schema["default"]
        validators[name] = validator
    schemas: dict[str, Any] = dict(spec.options)
    if "scale" not in spec.options and (spec.score is None or spec.score.scale == "options.scale"):
        schemas["scale"] = {"type": "number", "exclusiveMinimum": 0, "default": 1}
        defaults["scale"] = 1
        validators["scale"] = OptionValidator(schemas["scale"])
    return OptionsPlan(defaults, validators, schemas)



def declared_field(name: str, schema: dict[str, Any], description: str, doc: Document,
                    options: OptionsPlan) -> FieldPlan | None:
    """A declared field's plan; its schema must be valid, and the default of an option of the
    same name (when not null) must satisfy it."""
    exc = schema_error(schema)
    if exc is not None:
        doc.add("invalid-schema", f"fields.{name}.schema", f"not a valid JSON Schema: {exc.message}")
        return None
    validator = OptionValidator(schema)
    from_option = name in options.defaults
    default = options.defaults.get(name)
    if default is not None:
        error = validator.error(default)
        if error is not None:
            doc.add("option-default", f"options.{name}.default", f"the default does not satisfy the schema of "
                    f"field {name!r}: {error}", "an option named like a field gives that field's default")
    return FieldPlan(name, validator, from_option, description)


def _default_scale(score: Any, options: OptionsPlan) -> float | None:
    """The score's upper bound under the default options; None when it cannot be known at load
    (the scale reads an item's fields, or is no finite number)."""
    try:
        value = score.scale({"options": dict(options.defaults), "run": {}})
    except Exception:  # the scale reads what only an item gives
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        return None
    return float(value)


def checked_cutoff(spec: Any, score: Any, options: OptionsPlan, doc: Any) -> float | None:
    """The score's upper bound under the default options (`default_scale`, None when unknown),
    after recording in `doc` a `cutoff` that lies outside [0, that scale]."""
    scale = _default_scale(score, options) if score is not None else None
    if spec.cutoff is not None and scale is not None and spec.cutoff > scale:
        doc.add("invalid-value", "cutoff", f"the cut-off {spec.cutoff:g} is above the score's scale {scale:g}",
                f"give a cut-off within [0, {scale:g}]")
    return scale


def checked_examples(stage: Any, key: str, schema_exprs: tuple[Any, ...], doc: Any) -> tuple[dict[str, Any], ...]:
    """A prompt stage's worked examples, after recording in `doc` each one whose `answer` does not
    satisfy the stage's output schema (not checked when the schema has ``{$expr}`` values)."""
    if schema_exprs or not stage.examples or doc.problems:
        return tuple(stage.examples)
    validator = OptionValidator(stage.output_schema)
    for i, example in enumerate(stage.examples):
        if "answer" in example:
            error = validator.error(example["answer"])
            if error is not None:
                doc.add("invalid-value", f"{key}.examples[{i}].answer", f"the example's answer does not satisfy "
                        f"the stage's output schema: {error}")
    return tuple(stage.examples)
