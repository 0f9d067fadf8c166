"""The expression-functions reference page: the registered rule functions, and the filters,
tests and globals of the sandboxed Jinja environment specs' expressions run in.

`render_functions(rule_functions, jinja)` is pure; `jinja_names(ours, jinja_default)` sorts an
environment's names into what scorespec adds, bounds, replaces and removes (compared with a plain
Jinja sandbox).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ref_markdown import code, docstring_markdown, first_paragraph, table

INTRO = """\
# Expression functions

Expressions (`when`, `result`, `checks`, `vars`, `score.let`, `formula`, rule `args`) and
templates (prompts, reasons) are Jinja, compiled once when the spec loads, in a sandbox with
strict undefined names. This page is generated from the engine: the **rule functions** a rule
stage calls by name (`function:`), then the **filters**, **tests** and **globals** an expression
or template may use. `scorespec list --functions` prints the rule functions too (with
`--json`: their argument and result schemas). The keys of a spec are on the
[spec format](spec-format.md) page.
"""


@dataclass(frozen=True)
class JinjaNames:
    """An environment's names by origin. added: scorespec's own filters (name → function).
    bounded: Jinja filters wrapped with a size limit. filters, tests: every filter and test
    available (name → function). globals_added, globals_removed, globals_kept: compared with Jinja's sandbox."""

    added: dict[str, Callable[..., Any]] = field(default_factory=dict)
    bounded: list[str] = field(default_factory=list)
    filters: dict[str, Callable[..., Any]] = field(default_factory=dict)
    tests: dict[str, Callable[..., Any]] = field(default_factory=dict)
    globals_added: dict[str, Any] = field(default_factory=dict)
    globals_removed: list[str] = field(default_factory=list)
    globals_kept: list[str] = field(default_factory=list)


def jinja_names(ours: Any, default: Any) -> JinjaNames:
    """Compare environment `ours` with Jinja's `default` one (both `jinja2.Environment`s)."""
    added, bounded = {}, []
    for name, fn in sorted(ours.filters.items()):
        base = default.filters.get(name)
        if fn is base:
            continue
        if base is not None and getattr(fn, "__wrapped__", None) is base:
            bounded.append(name)
        else:
            added[name] = fn
    return JinjaNames(
        added=added, bounded=bounded, filters=dict(sorted(ours.filters.items())),
        tests=dict(sorted(ours.tests.items())),
        globals_added={k: v for k, v in sorted(ours.globals.items()) if k not in default.globals},
        globals_removed=sorted(k for k in default.globals if k not in ours.globals),
        globals_kept=sorted(k for k in default.globals if k in ours.globals),
    )


def call_text(name: str, fn: Callable[..., Any], kind: str = "global") -> str:
    """How an expression calls `fn`, by `kind`: ``value | name(a, b=1)`` for a ``"filter"``,
    ``value is name(b)`` for a ``"test"`` (the value is their first argument), ``name(a, b)`` for a
    ``"global"``; a built-in such as `min` by the call forms its docstring opens with."""
    piped = kind != "global"
    sep = " is " if kind == "test" else " | "
    try:
        params = [p.replace(annotation=inspect.Parameter.empty)
                  for p in inspect.signature(fn).parameters.values()]
    except (TypeError, ValueError):
        forms = (inspect.getdoc(fn) or "").split("\n\n", 1)[0].splitlines()
        return " or ".join(f.split(" -> ")[0] for f in forms if f.startswith(name + "(")) or f"{name}(…)"
    if getattr(fn, "jinja_pass_arg", None) and params:
        params = params[1:]  # the context or environment Jinja passes first
    if piped and params:
        params = params[1:]
    args = ", ".join(str(p).replace("'", '"') for p in params)
    if piped:
        return f"value{sep}{name}({args})" if args else f"value{sep}{name}"
    return f"{name}({args})"


def _doc(fn: Any) -> str:
    doc = inspect.getdoc(fn) or ""
    if doc and "->" in doc.split("\n\n", 1)[0]:  # a built-in's doc opens with its call forms
        return first_paragraph(doc.split("\n\n", 1)[1]) if "\n\n" in doc else ""
    return first_paragraph(doc)


def rule_function_section(fn: Any) -> str:
    """One `engine.functions.RuleFunction` as a ``###`` section: signature, result, size limit,
    and its docstring (the wrapped function's, whole)."""
    out = [f"### {fn.name}\n", code(fn.signature()) + "\n", f"Returns {code(fn.result_words())}."
           + (f" Size limit: {fn.limit}." if fn.limit else "") + "\n"]
    doc = inspect.getdoc(fn.fn) or fn.summary
    if doc:
        out.append(docstring_markdown(doc) + "\n")
    return "\n".join(out)


def _rows(names: Mapping[str, Any], kind: str) -> list[list[str]]:
    return [[code(name), code(call_text(name, fn, kind)), _doc(fn)] for name, fn in names.items()]


def render_functions(rule_functions: Iterable[Any], jinja: JinjaNames) -> str:
    """The expression-functions page (Markdown). `rule_functions`: `RuleFunction`s, by name."""
    functions = sorted(rule_functions, key=lambda f: f.name)
    parts = [INTRO, "## Rule functions\n",
             "A rule stage (`function: NAME`, `args: {argument: expression}`) calls one of these. "
             "Arguments are checked against their declared types on every call and the result against "
             "its declared keys; a value either refuses fails the item.\n",
             table(["function", "returns", "summary"],
                   [[f"[{f.name}](#{f.name})", code(f.result_words()), f.summary]
                    for f in functions])]
    parts += [rule_function_section(f) for f in functions]
    parts += ["## Filters scorespec adds\n",
              "Written after a value and `|`, in any expression or template.\n",
              table(["filter", "call", "what it gives"], _rows(jinja.added, "filter")),
              "## Globals scorespec adds\n",
              table(["name", "call", "what it gives"], _rows(jinja.globals_added, "global")),
              f"Jinja's own {', '.join(code(n) for n in jinja.globals_kept)} remain (`range` limited to "
              f"100,000 numbers); its {', '.join(code(n) for n in jinja.globals_removed)} are not available.\n",
              "## Jinja's filters\n",
              "The filters Jinja itself brings, all usable. "
              + (f"These refuse to build a text or list past the sandbox's size limit: "
                 f"{', '.join(code(n) for n in jinja.bounded)}.\n" if jinja.bounded else "\n"),
              table(["filter", "call", "what it gives"],
                    _rows({k: v for k, v in jinja.filters.items() if k not in jinja.added}, "filter")),
              "## Tests\n",
              "Written after `is` (`value is defined`, `n is divisibleby(3)`).\n",
              table(["test", "call", "what it checks"], _rows(jinja.tests, "test"))]
    return "\n".join(p for p in parts if p)
