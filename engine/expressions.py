"""One small language for templates and rules: Jinja, sandboxed, with strict undefined.

Templates (prompt files, reason texts) and expressions (`when`, checks, `let`, formulas, rule
arguments) are compiled once, at load, in one `SandboxedEnvironment(undefined=StrictUndefined)`:
a misspelled name raises instead of rendering empty, and attribute walks such as
``__class__`` or ``__globals__`` are refused (at load when written literally, by the sandbox
otherwise). Untrusted text only ever enters as variable values, never as template source.
"""

from __future__ import annotations

import math
import re
from functools import lru_cache
from typing import Any

from jinja2 import StrictUndefined, TemplateSyntaxError, meta, nodes
from jinja2.sandbox import SandboxedEnvironment
from jinja2.utils import consume


def _lower_trim(value: Any) -> Any:
    return value.strip().lower() if isinstance(value, str) else value


def _count(values: Any, attribute: str, equal_to: Any) -> int:
    """Number of items whose `attribute` equals `equal_to` (case and surrounding spaces ignored)."""
    want = _lower_trim(equal_to)
    return sum(1 for item in values or () if _lower_trim(_get(item, attribute)) == want)


def _get(item: Any, attribute: str) -> Any:
    return item.get(attribute) if isinstance(item, dict) else getattr(item, attribute, None)


def _num(value: Any, places: int = 4) -> str:
    """A number for people: at most `places` decimals, no trailing zeros (10.0 → "10")."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return str(value)
    text = f"{value:.{places}f}".rstrip("0").rstrip(".")
    return "0" if text == "-0" else text


def _finite(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


@lru_cache(maxsize=1)
def environment() -> SandboxedEnvironment:
    """The shared environment. Filters beyond Jinja's built-ins: `count(attr, value)` and
    `num(places=4)`; globals `min`, `max`, `abs`, `finite`."""
    env = SandboxedEnvironment(
        undefined=StrictUndefined,
        autoescape=False,
        keep_trailing_newline=False,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters["count"] = _count
    env.filters["num"] = _num
    env.globals.update(min=min, max=max, abs=abs, finite=_finite)
    return env


_PREPARED = "__scorespec_namespace__"


def prepare(variables: dict[str, Any]) -> dict[str, Any]:
    """A namespace for evaluation: the environment's globals plus `variables`. Expressions
    and templates evaluate a prepared namespace in place (no per-call copy); callers add
    names to it as a run proceeds."""
    namespace = dict(environment().globals)
    namespace.update(variables)
    namespace[_PREPARED] = True
    return namespace


_DUNDER = re.compile(r"__\w+__|\b(mro|func_globals|f_globals|gi_frame|cr_frame)\b")


class Expression:
    """A compiled expression. `names` are the free variables it reads; `attrs` the
    ``(variable, key)`` pairs it reads as ``variable.key`` or ``variable['key']``."""

    __slots__ = ("source", "names", "attrs", "_fn")

    def __init__(self, source: str):
        env = environment()
        self.source = source
        ast = env.parse("{{ (" + source + "\n) }}")
        self.names = frozenset(meta.find_undeclared_variables(ast)) - set(env.globals)
        _reject_unsafe(ast)  # after the analysis above, which folds constants ('__cla' ~ 'ss__')
        self.attrs = _attribute_uses(ast)
        self._fn = env.compile_expression(source, undefined_to_none=False)

    def __call__(self, namespace: dict[str, Any]) -> Any:
        """Evaluate over `namespace` (a `prepare` result is used as is, without a copy)."""
        template = self._fn._template
        context = template.new_context(namespace if _PREPARED in namespace else prepare(namespace), shared=True)
        consume(template.root_render_func(context))
        return context.vars["result"]


class Template:
    """A compiled template. `names` are the free variables it reads; `attrs` as for
    `Expression`."""

    __slots__ = ("source", "names", "attrs", "_template", "file")

    def __init__(self, source: str, file: str = "<template>"):
        env = environment()
        self.source = source
        self.file = file
        ast = env.parse(source, filename=file)
        self.names = frozenset(meta.find_undeclared_variables(ast)) - set(env.globals)
        _reject_unsafe(ast)  # after the analysis above, which folds constants ('__cla' ~ 'ss__')
        self.attrs = _attribute_uses(ast)
        self._template = env.from_string(ast)

    def render(self, namespace: dict[str, Any]) -> str:
        """Render over `namespace` (a `prepare` result is used as is, without a copy)."""
        template = self._template
        context = template.new_context(namespace if _PREPARED in namespace else prepare(namespace), shared=True)
        try:
            return template.environment.concat(template.root_render_func(context))  # type: ignore[attr-defined]
        except Exception:
            return template.environment.handle_exception()


def _attribute_uses(ast: nodes.Node) -> frozenset[tuple[str, str]]:
    """``(variable, key)`` for each ``variable.key`` / ``variable['key']`` read (method calls
    such as ``options.get(...)`` excluded), so the compiler can check keys of known mappings."""
    called = {id(call.node) for call in ast.find_all(nodes.Call)}
    found = set()
    for node in ast.find_all((nodes.Getattr, nodes.Getitem)):
        if id(node) in called or not isinstance(node.node, nodes.Name):
            continue
        if isinstance(node, nodes.Getattr):
            key = node.attr
        else:
            key = node.arg.value if isinstance(node.arg, nodes.Const) else None
        if isinstance(key, str):
            found.add((node.node.name, key))
    return frozenset(found)


def _reject_unsafe(ast: nodes.Node) -> None:
    """Refuse dunder and frame attribute walks at load time (the sandbox refuses them anyway),
    and `include`/`import`/`extends`, which cannot work here: templates are self-contained."""
    for node in ast.find_all((nodes.Include, nodes.Import, nodes.FromImport, nodes.Extends)):
        tag = {"Include": "include", "Import": "import", "FromImport": "from … import", "Extends": "extends"}
        raise TemplateSyntaxError(f"'{tag[type(node).__name__]}' is not supported: a template is self-contained",
                                  node.lineno)
    for node in ast.find_all((nodes.Getattr, nodes.Getitem)):
        name = node.attr if isinstance(node, nodes.Getattr) else getattr(node.arg, "value", None)
        if isinstance(name, str) and (name.startswith("_") or _DUNDER.search(name)):
            raise TemplateSyntaxError(f"access to '{name}' is not allowed", getattr(node, "lineno", 1))


__all__ = ["Expression", "Template", "TemplateSyntaxError", "environment"]
