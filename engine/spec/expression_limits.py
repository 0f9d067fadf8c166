"""The limits of the expression language (`engine.spec.expressions`): sizes checked while an
expression runs — ``*`` and ``**`` (`check_binop`), the filters that grow text from a number
(`bounded`, `SIZED_FILTERS`) — and what is refused at load (`reject_unsafe`): private and
dunder attribute walks, ``.format``, ``include`` / ``import`` / ``extends``, and sizes written
as constants beyond the limits (`constant` computes them). A size beyond a limit raises
`OverflowError` at run time, `jinja2.TemplateSyntaxError` at load.
"""

from __future__ import annotations

import functools
import operator
import re
from typing import Any

from jinja2 import TemplateSyntaxError, nodes
from jinja2.sandbox import MAX_RANGE

MAX_SIZE = 1_000_000  # characters or items one operation may build (a 1 MB output still fits)
MAX_POWER_BITS = 100_000  # bits of an integer `**` may build (about 30,000 digits)
MAX_JSON_INDENT = 100  # spaces `tojson(indent)` may indent by: the output grows with indent × depth

SIZED_FILTERS = ("center", "indent", "batch", "slice", "tojson", "format", "replace", "wordwrap", "truncate")
DUNDER = re.compile(r"__\w+__|\b(mro|func_globals|f_globals|gi_frame|cr_frame)\b")


def too_big(what: str, size: int, limit: int = MAX_SIZE) -> OverflowError:
    return OverflowError(f"{what} would build {size:,} characters or items, more than the limit of {limit:,}")


def is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def check_binop(op: str, left: Any, right: Any) -> None:
    """Raise `OverflowError` when ``left op right`` would build something too large."""
    if op == "**":
        if is_int(left) and is_int(right) and right > 0 and abs(left) > 1:
            bits = abs(left).bit_length() * right
            if bits > MAX_POWER_BITS:
                raise OverflowError(f"'**' would build an integer of about {bits:,} bits, more than the limit of "
                                    f"{MAX_POWER_BITS:,}")
    elif op == "*":
        for seq, times in ((left, right), (right, left)):
            if isinstance(seq, (str, list, tuple)) and is_int(times) and len(seq) * times > MAX_SIZE:
                raise too_big("'*'", len(seq) * times)


_PRINTF_SIZES = re.compile(r"%(?:\([^)]*\))?[-#0 +]*(\*|\d+)?(?:\.(\*|\d+))?")


def bounded(name: str, fn: Any) -> Any:
    """`fn` (a Jinja filter) refusing to build more than `MAX_SIZE`: numeric arguments (widths,
    counts) above it; printf widths adding up to more; `replace` and `indent` results that
    would be longer (computed before building them); `tojson` indents above `MAX_JSON_INDENT`
    or results above `MAX_SIZE`."""

    skip = 1 if getattr(fn, "jinja_pass_arg", None) else 0  # Jinja passes a context or environment first

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        if len(args) <= skip + 1 and not kwargs:  # the value alone (`x | tojson`): nothing sets a size
            return fn(*args)
        values = args[skip:]
        for number in [*values[1:], *kwargs.values()]:
            if is_int(number) and number > MAX_SIZE:
                raise too_big(f"|{name}({number})", number)
        if name == "format" and values and isinstance(values[0], str):
            total = 0
            for match in _PRINTF_SIZES.finditer(values[0]):
                for size in match.groups():
                    if size == "*":
                        raise too_big("|format width '*'", MAX_SIZE + 1)
                    total += int(size) if size else 0
            if total > MAX_SIZE:
                raise too_big("|format widths", total)
        elif name == "replace" and len(values) >= 3:
            text, old, new = (v if isinstance(v, str) else str(v) for v in values[:3])  # as Jinja makes them
            grown = len(text) + (text.count(old) if old else len(text) + 1) * (len(new) - len(old))
            if grown > MAX_SIZE:
                raise too_big("|replace", grown)
        elif name == "indent":
            text = values[0] if isinstance(values[0], str) else str(values[0])
            width = values[1] if len(values) > 1 else kwargs.get("width", 4)
            grown = len(text) + (len(width) if isinstance(width, str) else int(width)) * (text.count("\n") + 1)
            if grown > MAX_SIZE:
                raise too_big("|indent", grown)
        elif name == "tojson":
            indent = values[1] if len(values) > 1 else kwargs.get("indent")
            if is_int(indent) and indent > MAX_JSON_INDENT:
                raise OverflowError(f"|tojson(indent={indent}): at most {MAX_JSON_INDENT} spaces")
            result = fn(*args, **kwargs)
            if len(result) > MAX_SIZE:
                raise too_big("|tojson", len(result))
            return result
        return fn(*args, **kwargs)

    return wrapper


def reject_unsafe(found: list[nodes.Node]) -> None:
    """Refuse at load time: dunder, private and frame attribute walks (the sandbox refuses them
    anyway), ``|attr('_…')``, ``.format``/``.format_map``, sizes written as constants that
    exceed the limits (``range(10**9)``, ``'a' * 10**9``, ``x|center(10**9)``), and
    `include`/`import`/`extends`, which cannot work here: templates are self-contained."""
    for node in found:
        if not isinstance(node, (nodes.Include, nodes.Import, nodes.FromImport, nodes.Extends)):
            continue
        tag = {"Include": "include", "Import": "import", "FromImport": "from … import", "Extends": "extends"}
        raise TemplateSyntaxError(f"'{tag[type(node).__name__]}' is not supported: a template is self-contained",
                                  node.lineno)
    for node in found:
        if not isinstance(node, (nodes.Getattr, nodes.Getitem, nodes.Filter)):
            continue
        if isinstance(node, nodes.Filter):
            name = constant(node.args[0]) if node.name == "attr" and node.args else None
        else:
            name = node.attr if isinstance(node, nodes.Getattr) else getattr(node.arg, "value", None)
        if isinstance(name, str) and (name.startswith("_") or DUNDER.search(name)):
            raise TemplateSyntaxError(f"access to '{name}' is not allowed", getattr(node, "lineno", 1))
        if isinstance(node, nodes.Getattr) and node.attr in ("format", "format_map"):
            raise TemplateSyntaxError(f"'.{node.attr}' is not allowed (format strings can reach attributes); "
                                      "use the format filter: '%s' | format(value)", node.lineno)
    for node in found:
        if not isinstance(node, (nodes.Mul, nodes.Pow, nodes.Call, nodes.Filter)):
            continue
        try:
            if isinstance(node, (nodes.Mul, nodes.Pow)):
                constant(node)
            elif isinstance(node, nodes.Call) and isinstance(node.node, nodes.Name) and node.node.name == "range":
                for arg in node.args:
                    value = constant(arg)
                    if is_int(value) and abs(value) > MAX_RANGE:
                        raise OverflowError(f"range({value}) is larger than the limit of {MAX_RANGE:,} numbers")
            elif isinstance(node, nodes.Filter) and node.name in SIZED_FILTERS:
                for arg in [*node.args, *(kw.value for kw in node.kwargs)]:
                    value = constant(arg)
                    if is_int(value) and value > MAX_SIZE:
                        raise too_big(f"|{node.name}({value})", value)
        except OverflowError as exc:
            raise TemplateSyntaxError(str(exc), getattr(node, "lineno", 1)) from None


_UNKNOWN = object()
_ARITHMETIC = {nodes.Add: ("+", operator.add), nodes.Sub: ("-", operator.sub), nodes.Mul: ("*", operator.mul),
               nodes.Pow: ("**", operator.pow), nodes.FloorDiv: ("//", operator.floordiv),
               nodes.Mod: ("%", operator.mod)}


def constant(node: nodes.Node) -> Any:
    """The value of a constant expression (numbers and texts with + - * ** // %), computed
    within the size limits (raising `OverflowError` beyond them); `_UNKNOWN` otherwise."""
    if isinstance(node, nodes.Const):
        return node.value
    if isinstance(node, nodes.Neg):
        value = constant(node.node)
        return -value if is_int(value) or isinstance(value, float) else _UNKNOWN
    if type(node) in _ARITHMETIC:
        left, right = constant(node.left), constant(node.right)
        if left is _UNKNOWN or right is _UNKNOWN:
            return _UNKNOWN
        symbol, fn = _ARITHMETIC[type(node)]
        check_binop(symbol, left, right)
        try:
            return fn(left, right)
        except (ArithmeticError, TypeError, ValueError):
            return _UNKNOWN
    return _UNKNOWN


__all__ = ["MAX_JSON_INDENT", "MAX_POWER_BITS", "MAX_SIZE", "SIZED_FILTERS", "bounded", "check_binop", "constant",
           "is_int", "reject_unsafe", "too_big"]
