"""One small language for templates and rules: Jinja, sandboxed, with strict undefined.

Templates (prompt files, reason texts) and expressions (`when`, checks, `let`, formulas, rule
arguments) are compiled once, at load, in one `ImmutableSandboxedEnvironment(undefined=
StrictUndefined)`: a misspelled name raises instead of rendering empty, and attribute walks such
as ``__class__`` or ``__globals__`` are refused (at load when written literally, by the sandbox
otherwise). Untrusted text only ever enters as variable values, never as template source.

What the sandbox adds to Jinja's own (`engine.spec.expression_limits`: `reject_unsafe` at load;
`_Environment` and the `bounded` filters at run time):

- no attribute or key starting with ``_`` (dunders, name-mangled privates), nor ``mro`` and
  frame attributes; ``|attr('_…')``; no ``str.format`` / ``format_map`` (format strings reach
  attributes: ``'{0.__class__}'.format(x)``) — the ``format`` filter (printf style) remains;
- data cannot be changed in place (``run.context.append(…)``, ``options.update(…)``): the
  immutable sandbox, so one item cannot alter the options the next item sees;
- no ``lipsum``, ``cycler`` or ``joiner`` globals; ``range`` is limited to 100,000 numbers;
- sizes are bounded: ``*`` may not build a text or list longer than `MAX_SIZE`, ``**`` not an
  integer of more than `MAX_POWER_BITS` bits (both in `engine.spec.expression_limits`), and the
  filters that grow text from a number (``center``, ``indent``, ``batch``, ``slice``,
  ``tojson``, ``format``, ``replace``) refuse to produce more than `MAX_SIZE`. Written with constants (``range(10**9)``, ``'a' * 10**9``)
  this is an error at load; from data, the item fails (kind ``expression``).

Loops are not time-limited: a spec is reviewed configuration, and these limits stop the
one-line blow-ups, not an author who nests loops on purpose.
"""

from __future__ import annotations

import json
import math
import re
from decimal import ROUND_HALF_EVEN, ROUND_HALF_UP, Context, Decimal
from functools import lru_cache
from typing import Any

from jinja2 import StrictUndefined, TemplateSyntaxError, Undefined, nodes
from jinja2.compiler import CodeGenerator, Frame
from jinja2.parser import Parser
from jinja2.runtime import LoopContext
from jinja2.sandbox import ImmutableSandboxedEnvironment
from jinja2.utils import Namespace, consume

from .expression_limits import MAX_SIZE, SIZED_FILTERS, bounded, check_binop, is_int, reject_unsafe, too_big

MAX_PLACES = 20  # decimals `num` may show
MEANT_DIGITS = 12
"""Significant digits a computed number keeps before it is rounded: the float noise of a formula
(0.225 computed as 0.22499999999999998) lies far below them, what the formula means within."""


def decimal_half_away(value: float, places: int) -> Decimal:
    """`value` (a finite number) rounded half away from zero to `places` decimals (>= 0) as the
    decimal it stands for: first to `MEANT_DIGITS` significant digits (removing float noise:
    0.22499999999999998 → 0.225), then half away from zero (0.225 → 0.23, -0.125 → -0.13,
    0.575 → 0.58). When `places` asks for digits at or below that noise cut, the number's shortest
    decimal form (``repr``) is rounded instead. Python's `round` gives 0.22, 0.57 and 0.12: it
    rounds the binary value half to even."""
    exact = Decimal(value) if isinstance(value, int) else Decimal(repr(float(value)))
    digits = Context(prec=max(28, exact.adjusted() + places + 2))  # room for 1e300 to 20 places
    if exact and exact.adjusted() + places + 1 < MEANT_DIGITS:
        exact = exact.quantize(Decimal(1).scaleb(exact.adjusted() - MEANT_DIGITS + 1), ROUND_HALF_EVEN, digits)
    return exact.quantize(Decimal(1).scaleb(-places), ROUND_HALF_UP, digits)


def _lower_trim(value: Any) -> Any:
    return value.strip().lower() if isinstance(value, str) else value


def _count(values: Any, attribute: str, equal_to: Any) -> int:
    """Number of items whose `attribute` equals `equal_to` (case and surrounding spaces ignored)."""
    want = _lower_trim(equal_to)
    return sum(1 for item in values or () if _lower_trim(_get(item, attribute)) == want)


def _average_precision(values: Any, attribute: str, equal_to: Any, rank: str | None = None) -> float:
    """Average precision of a ranked list (its first item ranked first): the items whose
    `attribute` equals `equal_to` (case and surrounding spaces ignored, as `count`) are the
    relevant ones; the mean, over the relevant positions i (1-based), of the relevant items
    among the first i divided by i. In [0, 1]: 1 when every relevant item comes before every
    other, 0.0 when none is relevant (an empty list included). E.g. relevant, not, relevant,
    not → (1/1 + 2/3) / 2 = 0.8333. With `rank`, each item's position is its `rank` attribute
    (1-based, increasing) rather than its place in the list, so ranks left out of the list (blank
    passages, from `ranked_passages`) count as not relevant: positions 2 and 4 of 4, only 2
    relevant → 1/2 = 0.5."""
    want = _lower_trim(equal_to)
    found, total = 0, 0.0
    for position, item in enumerate(values or (), start=1):
        if _lower_trim(_get(item, attribute)) == want:
            found += 1
            total += found / (position if rank is None else _get(item, rank))
    return total / found if found else 0.0


def _ranked_passages(values: Any) -> list[dict[str, Any]]:
    """The passages of a ranked list that have text, each ``{position, passage}``: its 1-based
    rank in the whole list and its text trimmed. A blank passage (or a missing one) is left out
    but keeps its rank: ``["", " Paris ", "  ", "Lyon"]`` → ``[{position: 2, passage: "Paris"},
    {position: 4, passage: "Lyon"}]``."""
    ranked = []
    for position, value in enumerate(values or (), start=1):
        text = value.strip() if isinstance(value, str) else ""
        if text:
            ranked.append({"position": position, "passage": text})
    return ranked


def _folded(value: Any) -> Any:
    """A text with case and runs of spaces folded (``" The  Sky "`` → ``"the sky"``); any other
    value as it is."""
    return " ".join(value.split()).casefold() if isinstance(value, str) else value


def _identity(value: Any) -> tuple[str, Any]:
    """What `distinct` compares: a text folded, any other value as canonical JSON."""
    if isinstance(value, str):
        return ("text", _folded(value))
    return ("json", json.dumps(value, sort_keys=True, ensure_ascii=False, default=repr))


def _distinct(values: Any) -> list[Any]:
    """The list without repeats, the first of each kept, in order: texts are the same when they
    differ only in case and spacing (``"The sky."``, ``"the  sky."``), other values when their
    JSON is. E.g. a judge's claims, so that one claim said twice is judged and counted once."""
    seen: set[tuple[str, Any]] = set()
    kept = []
    for value in values or ():
        key = _identity(value)
        if key not in seen:
            seen.add(key)
            kept.append(value)
    return kept


def _copied(values: Any, examples: Any, source: Any = "") -> list[Any]:
    """The texts of `values` that repeat one of `examples` (case and spacing folded) and that
    `source` does not contain (folded too): what a judge copied from a prompt's example rather
    than took from the item. E.g. ``answer.claims | copied(example_claims, run.output_text)``
    is empty unless a claim is the prompt's example claim and the output does not say it."""
    shown = {_folded(example) for example in examples or () if isinstance(example, str)}
    text = _folded(source) if isinstance(source, str) else ""
    return [value for value in values or ()
            if isinstance(value, str) and _folded(value) in shown and _folded(value) not in text]


def _as_text(value: Any) -> str:
    """A value as text: a text as it is, None (or undefined) as ``""``, anything else as its
    JSON (``{"temp": 18}``, ``true``, ``18``), non-ASCII kept. E.g. tool results as passages:
    ``run.tool_calls | map(attribute='result', default=none) | map('as_text')``."""
    if value is None or isinstance(value, Undefined):
        return ""
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, default=str)


def _get(item: Any, attribute: str) -> Any:
    return item.get(attribute) if isinstance(item, dict) else getattr(item, attribute, None)


def _num(value: Any, places: int = 4) -> str:
    """A number for people: at most `places` decimals (0 to 20), rounded as scores are
    (`decimal_half_away`: 0.22499999999999998 → "0.23"), no trailing zeros (10.0 → "10")."""
    if not isinstance(places, int) or not 0 <= places <= MAX_PLACES:
        raise ValueError(f"num: places must be an integer from 0 to {MAX_PLACES}, not {places!r}")
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return str(value)
    if not math.isfinite(value):
        return f"{value}"
    text = f"{decimal_half_away(value, places):f}"
    text = text.rstrip("0").rstrip(".") if "." in text else text
    return "0" if text == "-0" else text


def _finite(value: Any) -> bool:
    """Whether `value` is a number that is neither infinite nor NaN (a boolean is not a number)."""
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


_DICT_ATTRIBUTES = frozenset(dir(dict))
_LOOP_ATTRIBUTES = frozenset({"index", "index0", "revindex", "revindex0", "first", "last", "length", "depth",
                              "depth0", "previtem", "nextitem"})


class _Environment(ImmutableSandboxedEnvironment):
    """Jinja's immutable sandbox with `*` and `**` checked (see the module docstring)."""

    intercepted_binops = frozenset({"*", "**"})

    def getattr(self, obj: Any, attribute: str) -> Any:
        """``obj.name``: for a dict and a name that is not a dict attribute, the key at once —
        what Jinja's attribute-first lookup ends with after an `AttributeError` (a third of a
        prompt's rendering time). Everything else goes through the sandbox as before."""
        kind = type(obj)
        if kind is dict and attribute not in _DICT_ATTRIBUTES:
            try:
                return obj[attribute]
            except KeyError:
                return self.undefined(obj=obj, name=attribute)
        if kind is Namespace:  # a template's own `namespace()`: its values, as Namespace reads them
            values = object.__getattribute__(obj, "_Namespace__attrs")
            return values[attribute] if attribute in values else self.undefined(obj=obj, name=attribute)
        if kind is LoopContext and attribute in _LOOP_ATTRIBUTES:  # `loop.index0`: public properties
            return getattr(obj, attribute)
        return super().getattr(obj, attribute)

    def call_binop(self, context: Any, op: str, left: Any, right: Any) -> Any:
        check_binop(op, left, right)
        return super().call_binop(context, op, left, right)

    def call(__self, __context: Any, __obj: Any, *args: Any, **kwargs: Any) -> Any:  # noqa: N805
        """Calls of text/list methods (``'x'.ljust(n)``, ``'x'.zfill(n)``) get the size limit too."""
        owner = getattr(__obj, "__self__", None)
        if isinstance(owner, (str, list, tuple)):
            for number in (*args, *kwargs.values()):
                if is_int(number) and number > MAX_SIZE:
                    raise too_big(f".{getattr(__obj, '__name__', 'method')}({number})", number)
            if isinstance(owner, str) and getattr(__obj, "__name__", "") == "replace":
                bounded("replace", lambda *a, **k: None)(owner, *args, **kwargs)
        return super().call(__context, __obj, *args, **kwargs)


DATA_DELIMITERS = re.compile(r"<{3,}|>{3,}")


def neutralise_delimiters(value: Any) -> str:
    """`value` as text with every run of three or more ``<`` or ``>`` spaced out (``>>>`` →
    ``> > >``), so it cannot open or close a prompt's ``<<<`` … ``>>>`` data block."""
    text = value if isinstance(value, str) else str(value)
    return DATA_DELIMITERS.sub(lambda m: " ".join(m.group()), text) if ("<<<" in text or ">>>" in text) else text


@lru_cache(maxsize=2)
def environment(prompt: bool = False) -> ImmutableSandboxedEnvironment:
    """The shared environment. Filters beyond Jinja's built-ins: `count(attr, value)`,
    `average_precision(attr, value)`, `num(places=4)`, `distinct`, `copied(examples, source)` and
    `as_text` (a value as text: JSON unless it is one);
    globals `min`, `max`, `abs`, `finite` (and Jinja's `range`, `dict`,
    `namespace`; not `lipsum`, `cycler`, `joiner`).

    `prompt=True` gives the environment of prompt files (what the judge reads): the same, plus
    every ``{{ … }}`` value passes through `neutralise_delimiters`. A prompt wraps untrusted
    text as ``<<<\n{{ run.output }}\n>>>``; an output containing ``>>>`` would otherwise end
    the data block early and put the rest of it where instructions go. The template's own
    literal text is left as written, so its delimiters stay the only real ones."""
    env = _Environment(
        undefined=StrictUndefined,
        autoescape=False,
        keep_trailing_newline=False,
        trim_blocks=True,
        lstrip_blocks=True,
        finalize=neutralise_delimiters if prompt else None,
    )
    for name in SIZED_FILTERS:
        env.filters[name] = bounded(name, env.filters[name])
    env.filters["count"] = _count
    env.filters["average_precision"] = _average_precision
    env.filters["ranked_passages"] = _ranked_passages
    env.filters["num"] = _num
    env.filters["distinct"] = _distinct
    env.filters["copied"] = _copied
    env.filters["as_text"] = _as_text
    for name in ("lipsum", "cycler", "joiner"):
        env.globals.pop(name, None)
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


class _TrackingCodeGenerator(CodeGenerator):
    """Jinja's code generator that also records the names the template reads from its
    context: what ``jinja2.meta.find_undeclared_variables`` learns in a second, discarded
    code-generation pass, collected here during the one that compiles."""

    def __init__(self, environment: ImmutableSandboxedEnvironment, filename: str):
        super().__init__(environment, None, filename, optimized=environment.optimized)
        self.undeclared: set[str] = set()

    def enter_frame(self, frame: Frame) -> None:
        super().enter_frame(frame)
        for action, param in frame.symbols.loads.values():
            if action == "resolve":
                self.undeclared.add(param)


_Compiled = tuple[Any, frozenset[str], frozenset[tuple[str, str]], dict[Any, int]]


def _compile(env: ImmutableSandboxedEnvironment, ast: nodes.Template, filename: str) -> _Compiled:
    """`ast` compiled with one code generation: the Jinja template, the free names it reads, its
    attribute uses and the first line of each (name or (name, key) → line). Raises
    `TemplateSyntaxError` (`reject_unsafe`) before any code runs."""
    generator = _TrackingCodeGenerator(env, filename)
    generator.visit(ast)
    found = list(ast.find_all(nodes.Node))  # after code generation, whose optimizer folds constants
    reject_unsafe(found)  # ('__cla' ~ 'ss__' is '__class__' by now)
    code = compile(generator.stream.getvalue(), filename, "exec")
    template = env.template_class.from_code(env, code, env.make_globals(None))
    names = frozenset(generator.undeclared) - set(env.globals)
    uses = _attribute_uses(found)
    lines: dict[Any, int] = {}
    for node in found:
        if isinstance(node, nodes.Name) and node.ctx == "load" and node.name in names:
            lines.setdefault(node.name, node.lineno)
    for key, line in uses.items():
        lines.setdefault(key, line)
    return template, names, frozenset(uses), lines


@lru_cache(maxsize=4096)
def _expression(source: str) -> _Compiled:
    env = environment()
    parser = Parser(env, source, state="variable")
    expr = parser.parse_expression()
    if not parser.stream.eos:
        raise TemplateSyntaxError("chunk after expression", parser.stream.current.lineno)
    ast = nodes.Template([nodes.Assign(nodes.Name("result", "store"), expr, lineno=1)], lineno=1)
    ast.set_environment(env)
    return _compile(env, ast, "<expression>")


@lru_cache(maxsize=1024)
def _template(source: str, file: str, prompt: bool) -> tuple[_Compiled, str | None]:
    """The compiled template, and its text when it is only text (no ``{{ }}``, no ``{% %}``:
    e.g. a judge's instructions), rendered once here rather than on every call."""
    env = environment(prompt)
    ast = env.parse(source, filename=file)
    compiled = _compile(env, ast, file)
    text_only = all(isinstance(node, (nodes.Output, nodes.TemplateData)) for node in ast.find_all(nodes.Node))
    return compiled, compiled[0].render() if text_only else None


def _context(template: Any, namespace: dict[str, Any]) -> Any:
    """A render context over `namespace` itself (what ``template.new_context(namespace,
    shared=True)`` makes, minus the copy of the globals' keys Jinja keeps for templates used as
    modules — templates here are not: `reject_unsafe` refuses import and include)."""
    env = template.environment
    return env.context_class(env, namespace if _PREPARED in namespace else prepare(namespace), template.name,
                             template.blocks)


class Expression:
    """A compiled expression. `names` are the free variables it reads; `attrs` the
    ``(variable, key)`` pairs it reads as ``variable.key`` or ``variable['key']``; `lines` the
    first line of each name and pair. The same source compiles once per process. Raises
    `TemplateSyntaxError`."""

    __slots__ = ("source", "names", "attrs", "lines", "_template")

    def __init__(self, source: str):
        self.source = source
        self._template, self.names, self.attrs, self.lines = _expression(source)

    def __call__(self, namespace: dict[str, Any]) -> Any:
        """Evaluate over `namespace` (a `prepare` result is used as is, without a copy)."""
        template = self._template
        context = _context(template, namespace)
        consume(template.root_render_func(context))
        return context.vars["result"]


class Template:
    """A compiled template. `names`, `attrs` and `lines` as for `Expression`. `prompt=True` for
    text the judge reads (see `environment`). The same source, file and kind compile once per
    process. Raises `TemplateSyntaxError`."""

    __slots__ = ("source", "names", "attrs", "lines", "_template", "_text", "file")

    def __init__(self, source: str, file: str = "<template>", *, prompt: bool = False):
        self.source = source
        self.file = file
        (self._template, self.names, self.attrs, self.lines), self._text = _template(source, file, prompt)

    def render(self, namespace: dict[str, Any]) -> str:
        """Render over `namespace` (a `prepare` result is used as is, without a copy)."""
        if self._text is not None:  # only text: the same every time
            return self._text
        template = self._template
        context = _context(template, namespace)
        try:
            return template.environment.concat(template.root_render_func(context))  # type: ignore[attr-defined]
        except Exception:
            return template.environment.handle_exception()


def _attribute_uses(found: list[nodes.Node]) -> dict[tuple[str, str], int]:
    """``(variable, key)`` → first line, for each ``variable.key`` / ``variable['key']`` read
    (method calls such as ``options.get(...)`` excluded), so the compiler can check keys of
    known mappings."""
    called = {id(call.node) for call in found if isinstance(call, nodes.Call)}
    uses: dict[tuple[str, str], int] = {}
    for node in found:
        if not isinstance(node, (nodes.Getattr, nodes.Getitem)) or id(node) in called \
                or not isinstance(node.node, nodes.Name):
            continue
        if isinstance(node, nodes.Getattr):
            key = node.attr
        else:
            key = node.arg.value if isinstance(node.arg, nodes.Const) else None
        if isinstance(key, str):
            uses.setdefault((node.node.name, key), node.lineno)
    return uses


def syntax_hint(message: str | None) -> str:
    """A did-you-mean for Jinja's "No filter named 'lenght'." / "No test named …" errors ("" for
    another message)."""
    match = re.search(r"No (filter|test) named '([^']+)'", message or "")
    if not match:
        return ""
    from ..core.errors import did_you_mean

    env = environment()
    return did_you_mean(match.group(2), env.filters if match.group(1) == "filter" else env.tests)


__all__ = ["MEANT_DIGITS", "Expression", "Template", "decimal_half_away", "environment", "neutralise_delimiters",
           "syntax_hint"]
