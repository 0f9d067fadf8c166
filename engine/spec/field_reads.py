"""Which fields a compiled spec reads, and the ``[unread-field]`` warnings of ``scorespec validate``.

A spec that declares a field and never reads it (a prompt that renders ``run.input`` twice and
never the output) loads and scores; it just does not look at what it was given. `unread_fields`
finds each such field. A field counts as read when any template or expression of the plan —
prompts, the judge's instructions, vars, ``when``, ``for_each``, checks, results, ``$expr``
values, ``reduce``, ``probabilities``, rule stages' arguments, the score, the reasons — reads a
key of ``run`` that reads it (`engine.core.run_fields.FIELDS_READ`: ``run.output_text`` reads
``output``). The reads are found in Jinja's syntax tree:

- ``run.KEY``, ``run['KEY']`` and ``run.get('KEY')`` read KEY;
- ``run[EXPR]`` and ``run.get(EXPR)`` read every key EXPR can give: its constant texts, through
  conditionals, ``or`` / ``and``, the vars and ``let`` names it refers to, and an option's
  ``enum`` (an option with no enum can name any field, as can any other expression);
- ``'KEY' in run.given`` reads KEY (whether the item gives it decides something);
- ``run`` used whole (``run | tojson``, ``run.items()``, passed on) reads every field;
- a pairwise stage reads ``output_a`` and ``output_b`` (its prompt reads them as ``pair``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Mapping
from functools import lru_cache
from pathlib import Path
from typing import Any

from jinja2 import nodes
from jinja2.parser import Parser

from ..core.errors import Problem
from ..core.run_fields import FIELDS_READ, PAIR_FIELDS
from .document import Document
from .expressions import Expression, Template, environment
from .plans import ScorerPlan

ANY = None
"""What `keys_read` gives when an expression may read any key of ``run``."""


def unread_fields(plan: ScorerPlan, doc: Document) -> list[Problem]:
    """A warning (code ``unread-field``) for each field of the spec's ``fields:`` (its own and
    those of the specs it extends) that nothing in `plan` reads, located where the field is
    declared (in a parent's file, the hint names this spec). `doc` is the document `plan` was
    compiled from. Empty when every field is read."""
    declared = doc.data.get("fields") if isinstance(doc.data, dict) else None
    if not isinstance(declared, dict):
        return []
    read = fields_read(plan)
    found = []
    for name, field_spec in declared.items():
        if read is ANY or name in read:
            continue
        required = isinstance(field_spec, dict) and field_spec.get("required") is True
        where = doc.position(f"fields.{name}")
        inherited = where.file and Path(where.file).resolve() != doc.path.resolve()
        found.append(Problem(
            "unread-field", f"field {name!r} is {'required' if required else 'declared'} but no prompt, expression "
            "or rule stage of this spec reads it", where.file, where.line, where.column, doc.written(f"fields.{name}"),
            f"in spec {plan.id!r}, which extends the spec declaring it" if inherited else "", severity="warning"))
    return found


def fields_read(plan: ScorerPlan) -> frozenset[str] | None:
    """The fields `plan` reads (run fields and its own), or `ANY` when it may read any."""
    named = {name: _tree(expression) for name, expression in (*plan.vars, *plan.score.let)}
    schemas = plan.options.schemas
    fields: set[str] = set()
    if any(getattr(stage, "pairwise", None) is not None for stage in plan.stages):
        fields.update(PAIR_FIELDS)  # a pairwise stage reads both responses (`engine.interpret.pairwise`)
    for compiled in _compiled(plan):
        keys = keys_read(_tree(compiled), named, schemas)
        if keys is ANY:
            return ANY
        for key in keys:
            fields.update(FIELDS_READ.get(key, (key,)))
    return frozenset(fields)


def reads_language(plan: ScorerPlan) -> bool:
    """Whether `plan` reads the item's language: ``run.language`` or ``run.language_name``, any
    key of ``run``, or an engine-written reason given in languages besides English (the item's
    language picks the template)."""
    if plan.translated_reasons:
        return True
    read = fields_read(plan)
    return read is ANY or "language" in read


def keys_read(tree: nodes.Node, named: Mapping[str, nodes.Node],
              schemas: Mapping[str, Mapping[str, Any]]) -> set[str] | None:
    """The keys of ``run`` that `tree` (a template's or an expression's syntax tree) reads, or
    `ANY`. `named`: the trees of the vars and ``let`` names a key may come from; `schemas`: the
    options' JSON Schemas (an option with an ``enum`` names only those values)."""
    found = [tree, *tree.find_all(nodes.Node)]
    calls = {id(node.node): node for node in found if isinstance(node, nodes.Call)}
    keyed: set[int] = set()
    keys: set[str] = set()
    for node in found:
        key: set[str] | None = set()
        if isinstance(node, nodes.Getattr) and _is_run(node.node):
            call = calls.get(id(node))
            if call is None:
                key = {node.attr}
            elif node.attr == "get" and call.args:
                key = _possible(call.args[0], named, schemas, ())
            else:
                key = ANY  # run.items(), run.values(), …
        elif isinstance(node, nodes.Getitem) and _is_run(node.node):
            key = _possible(node.arg, named, schemas, ())
        elif isinstance(node, nodes.Compare) and _given_test(node):
            key = {node.expr.value}  # type: ignore[attr-defined]
        else:
            continue
        if key is ANY:
            return ANY
        keys.update(key)
        if not isinstance(node, nodes.Compare):  # (the test's `run.given` is a Getattr of its own)
            keyed.add(id(node.node))
    if any(_is_run(node) and id(node) not in keyed for node in found):
        return ANY  # `run` used whole
    return keys


def _is_run(node: Any) -> bool:
    return isinstance(node, nodes.Name) and node.name == "run" and node.ctx == "load"


def _given_test(node: nodes.Compare) -> bool:
    """Whether `node` is ``'KEY' in run.given`` (or ``not in``)."""
    if len(node.ops) != 1 or node.ops[0].op not in ("in", "notin"):
        return False
    target = node.ops[0].expr
    return (isinstance(node.expr, nodes.Const) and isinstance(node.expr.value, str)
            and isinstance(target, nodes.Getattr) and target.attr == "given" and _is_run(target.node))


def _possible(node: nodes.Node, named: Mapping[str, nodes.Node], schemas: Mapping[str, Mapping[str, Any]],
              seen: tuple[str, ...]) -> set[str] | None:
    """The texts `node` can give as a key, or `ANY` when they cannot be told at load."""
    if isinstance(node, nodes.Const):
        return {node.value} if isinstance(node.value, str) else set()
    if isinstance(node, nodes.CondExpr):
        parts = [node.expr1] + ([node.expr2] if node.expr2 is not None else [])
    elif isinstance(node, (nodes.Or, nodes.And)):
        parts = [node.left, node.right]
    elif isinstance(node, nodes.Name) and node.name in named and node.name not in seen:
        return _possible(named[node.name], named, schemas, (*seen, node.name))
    elif isinstance(node, nodes.Getattr) and isinstance(node.node, nodes.Name) and node.node.name == "options":
        enum = schemas.get(node.attr, {}).get("enum")
        return {v for v in enum if isinstance(v, str)} if isinstance(enum, list) else ANY
    else:
        return ANY
    found: set[str] = set()
    for part in parts:
        keys = _possible(part, named, schemas, seen)
        if keys is ANY:
            return ANY
        found |= keys
    return found


def _compiled(value: Any, seen: set[int] | None = None) -> Iterator[Expression | Template]:
    """Every expression and template held anywhere in a plan (dataclasses, tuples, mappings),
    each container visited once."""
    seen = set() if seen is None else seen
    if isinstance(value, (Expression, Template)):
        yield value
        return
    if isinstance(value, (str, bytes)) or id(value) in seen:
        return
    seen.add(id(value))
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        for field in dataclasses.fields(value):
            yield from _compiled(getattr(value, field.name), seen)
    elif isinstance(value, (tuple, list)):
        for item in value:
            yield from _compiled(item, seen)
    elif isinstance(value, Mapping):
        for item in value.values():
            yield from _compiled(item, seen)


def _tree(compiled: Expression | Template) -> nodes.Node:
    return _parsed(compiled.source, isinstance(compiled, Template))


@lru_cache(maxsize=1024)
def _parsed(source: str, template: bool) -> nodes.Node:
    """The syntax tree of a template or an expression that has compiled (so parses)."""
    env = environment()
    if template:
        return env.parse(source)
    return Parser(env, source, state="variable").parse_expression()


__all__ = ["ANY", "fields_read", "keys_read", "unread_fields"]
