"""The spec format's reference page, from the format's JSON Schema (`engine.spec.models.spec_json_schema`).

`render_spec_format(schema, defaults)` is pure: one section per model (the top level first,
then each nested model in the order the keys reach it), a row per key with its type, default,
whether it is required, and its description.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from ref_markdown import anchor, code, json_value, table

ROOT = "Spec"

INTRO = """\
# Spec format

A scorer is one YAML file under `scorer_specs/`, validated against the format below before
anything runs. This page is generated from the format's own models, the same source as the
JSON Schema that `scorespec schema` prints and that every shipped spec names on its first line
(`# yaml-language-server: $schema=./scorespec.schema.json`), so an editor shows these
descriptions as you type.

Every section is one mapping of the format: its keys, their type, their default, whether they
are required, and what they mean. Unknown keys are errors. Expressions and templates are
sandboxed Jinja; the [expression functions](functions.md) page lists what they may call. How to
write a spec step by step: [Writing a spec](../guides/writing-a-spec.md); how `extends:` merges
a spec over another: [Extending a built-in](../guides/extending.md).
"""


def ref_name(ref: str) -> str:
    """``#/$defs/JudgeSpec`` → ``JudgeSpec``."""
    return ref.rsplit("/", 1)[-1]


def type_text(prop: Mapping[str, Any]) -> str:
    """A property schema's type in words, nested models linked to their section
    (``list of [Check](#check)``, ``number (0 to 2)``, ``"higher_is_better" | "lower_is_better"``)."""
    if "$ref" in prop:
        name = ref_name(prop["$ref"])
        return f"[{name}](#{anchor(name)})"
    for key in ("anyOf", "oneOf"):
        if key in prop:
            parts = [type_text(p) for p in prop[key] if p.get("type") != "null"]
            return " or ".join(dict.fromkeys(parts)) or "null"
    if "const" in prop:
        return code(json.dumps(prop["const"]))
    if "enum" in prop:
        return " | ".join(code(json.dumps(v)) for v in prop["enum"])
    kind = prop.get("type")
    if isinstance(kind, list):
        return " or ".join(kind)
    if kind == "array":
        items = prop.get("items")
        return f"list of {type_text(items)}" if isinstance(items, Mapping) and items else "list"
    if kind == "object":
        values = prop.get("additionalProperties")
        if isinstance(values, Mapping) and values:
            return f"mapping of name → {type_text(values)}"
        return "mapping"
    return (kind or "any") + _bounds(prop)


def _bounds(prop: Mapping[str, Any]) -> str:
    low, high = prop.get("minimum"), prop.get("maximum")
    if low is not None and high is not None:
        return f" ({low} to {high})"
    if low is not None:
        return f" (at least {low})"
    if high is not None:
        return f" (at most {high})"
    return ""


def whole_form(schema: Mapping[str, Any], name: str, prop: Mapping[str, Any]) -> Mapping[str, Any]:
    """The top-level property `name` as a spec that extends none must write it: the `else` branch of
    a conditional that narrows it (``stages``), else `prop` itself."""
    for rule in schema.get("allOf", ()):
        found = rule.get("else", {}).get("properties", {}).get(name)
        if found is not None:
            return {**prop, **found}
    return prop


def model_paths(schema: Mapping[str, Any]) -> dict[str, list[str]]:
    """Each model (by title) → the key paths it is written at (``stages[].checks[]``), in reading
    order: the top level, then each `$defs` entry as keys reach it (depth first), then the ones no
    key reaches (the stage patches, at no path)."""
    defs = schema.get("$defs", {})
    found: dict[str, list[str]] = {ROOT: [""]}

    def visit(node: Any, path: str) -> None:
        if isinstance(node, Mapping):
            if "$ref" in node:
                name = ref_name(node["$ref"])
                if name in defs:
                    first = name not in found
                    paths = found.setdefault(name, [])
                    if path not in paths:
                        paths.append(path)
                    if first:
                        for key, prop in defs[name].get("properties", {}).items():
                            visit(prop, f"{path}.{key}")
            for key in ("anyOf", "oneOf"):
                for option in node.get(key, ()):
                    visit(option, path)
            if isinstance(node.get("items"), Mapping):
                visit(node["items"], path + "[]")
            if isinstance(node.get("additionalProperties"), Mapping):
                visit(node["additionalProperties"], path + ".NAME")

    for name, prop in schema.get("properties", {}).items():
        visit(whole_form(schema, name, prop), name)
    for rule in schema.get("allOf", ()):  # the forms a spec that extends another may write (patches)
        for name, prop in rule.get("then", {}).get("properties", {}).items():
            visit(prop, name)
    return {**found, **{name: [] for name in defs if name not in found}}


def _default(name: str, prop: Mapping[str, Any], given: Mapping[str, Any]) -> str:
    if "default" in prop:
        return json_value(prop["default"])
    if name in given:
        return json_value(given[name])
    return "—"


def _required(name: str, model: Mapping[str, Any], conditional: list[str]) -> str:
    if name in model.get("required", ()):
        return "yes"
    if name in conditional:
        return "yes, unless abstract or given by the spec it extends"
    return "no"


def model_section(title: str, model: Mapping[str, Any], schema: Mapping[str, Any],
                  defaults: Mapping[str, Any], paths: list[str] = ()) -> str:
    """One model's section: heading, description, where it is written, and a table of its keys."""
    conditional = list(schema.get("else", {}).get("required", ())) if title == ROOT else []
    base = title[: -len("Patch")] if title.endswith("Patch") else ""
    out = [f"## {title}\n", f"{model.get('description', '').strip()}\n"]
    if any(paths):
        out.append("Written at " + ", ".join(code(p) for p in paths if p) + ".\n")
    if base and base in schema.get("$defs", {}):
        out.append(f"Its keys are those of [{base}](#{anchor(base)}), each optional except `id`.\n")
        return "\n".join(out)
    rows = []
    for name, prop in model.get("properties", {}).items():
        shown = whole_form(schema, name, prop) if title == ROOT else prop
        rows.append([code(name), type_text(shown), _default(name, prop, defaults),
                     _required(name, model, conditional), prop.get("description", "")])
    out.append(table(["key", "type", "default", "required", "description"], rows))
    return "\n".join(out)


def render_spec_format(schema: Mapping[str, Any], defaults: Mapping[str, Mapping[str, Any]] | None = None) -> str:
    """The spec format page (Markdown) from its JSON Schema. `defaults`: model title → key →
    default value, for keys whose schema gives none (a `default_factory` in the models)."""
    defaults = defaults or {}
    parts = [INTRO]
    for title, paths in model_paths(schema).items():
        model = schema if title == ROOT else schema["$defs"][title]
        parts.append(model_section(title, model, schema, defaults.get(title, {}), paths))
    return "\n".join(parts)


def model_defaults(models: Any) -> dict[str, dict[str, Any]]:
    """model title → key → default, for the keys of each pydantic model in `models` (a module)
    whose default comes from a factory (an empty list or mapping, a model of defaults)."""
    found: dict[str, dict[str, Any]] = {}
    for name in dir(models):
        cls = getattr(models, name)
        fields = getattr(cls, "model_fields", None)
        if not isinstance(fields, dict) or not isinstance(cls, type):
            continue
        for key, field in fields.items():
            if field.default_factory is not None:
                value = field.get_default(call_default_factory=True)
                value = {} if hasattr(value, "model_dump") else value  # a model: its own keys' defaults
                found.setdefault(name, {})[field.alias or key] = value
    return found
