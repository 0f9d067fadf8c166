"""Line-aware YAML loading with the YAML 1.2 core schema.

The document is composed once; the value tree is built from the nodes while every key path
(``stages[1].output_schema.properties``) is indexed with its line and column, so later phases
can report problems where they are. Differences from PyYAML's default (YAML 1.1) loading, all
chosen so that what a spec author wrote is what the engine sees:

- only ``true``/``false`` are booleans: ``yes``, ``no``, ``on``, ``off`` stay strings (case C08);
- no timestamps: ``2024-01-01`` stays a string;
- duplicate keys are errors (PyYAML keeps the last silently);
- non-string keys keep their source text (``1:`` is the key ``"1"``).
"""

from __future__ import annotations

import re
from typing import Any

import yaml

from ..core.errors import Problem

try:  # libyaml's scanner and parser when PyYAML was built with it; composer and resolver stay in Python
    from yaml.cyaml import CParser as _Parser  # not re-exported as yaml.CParser

    _WITH_LIBYAML = True
except ImportError:  # pragma: no cover - depends on the PyYAML build
    _WITH_LIBYAML = False

MAX_NODES = 200_000  # guards against alias bombs ("billion laughs")
_TOO_DEEP = "the document is nested too deeply"


class _CoreResolver(yaml.resolver.BaseResolver):
    """YAML 1.2 core schema resolution for plain scalars."""


_CoreResolver.yaml_implicit_resolvers = {}
for _tag, _regexp, _first in (
    ("tag:yaml.org,2002:bool", r"^(?:true|True|TRUE|false|False|FALSE)$", "tTfF"),
    ("tag:yaml.org,2002:int", r"^(?:[-+]?[0-9]+|0o[0-7]+|0x[0-9a-fA-F]+)$", "-+0123456789"),
    (
        "tag:yaml.org,2002:float",
        r"^(?:[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?"
        r"|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$",
        "-+.0123456789",
    ),
    ("tag:yaml.org,2002:null", r"^(?:~|null|Null|NULL|)$", ["~", "n", "N", ""]),
):
    _CoreResolver.add_implicit_resolver(_tag, re.compile(_regexp), list(_first))


if _WITH_LIBYAML:

    class _Loader(yaml.composer.Composer, _Parser, _CoreResolver):  # type: ignore[misc]
        """libyaml scans and parses; PyYAML's composer (first in the MRO) builds the nodes:
        libyaml's own composer recurses in C and crashes the process on deep nesting, where
        Python's raises `RecursionError`."""

        def __init__(self, stream: str):
            _Parser.__init__(self, stream)
            yaml.composer.Composer.__init__(self)
            _CoreResolver.__init__(self)

else:  # pragma: no cover

    class _Loader(  # type: ignore[no-redef]
        yaml.reader.Reader, yaml.scanner.Scanner, yaml.parser.Parser, yaml.composer.Composer, _CoreResolver
    ):
        def __init__(self, stream: str):
            yaml.reader.Reader.__init__(self, stream)
            yaml.scanner.Scanner.__init__(self)
            yaml.parser.Parser.__init__(self)
            yaml.composer.Composer.__init__(self)
            _CoreResolver.__init__(self)


_BOOL_1_1 = {"yes", "no", "on", "off", "y", "n"}


def _scalar(node: yaml.ScalarNode) -> Any:
    tag, text = node.tag, node.value
    if tag == "tag:yaml.org,2002:str":
        return text
    if tag == "tag:yaml.org,2002:null":
        return None
    if tag == "tag:yaml.org,2002:bool":
        return text.lower() == "true"
    if tag == "tag:yaml.org,2002:int":
        if text.startswith("0o"):
            return int(text[2:], 8)
        if text.startswith("0x"):
            return int(text[2:], 16)
        return int(text)
    if tag == "tag:yaml.org,2002:float":
        low = text.lower()
        if low.endswith("inf"):
            return float("-inf") if low.startswith("-") else float("inf")
        if low.endswith("nan"):
            return float("nan")
        return float(text)
    raise ValueError(f"unsupported tag {tag!r}")


def _pos(node: yaml.Node) -> tuple[int, int]:
    return node.start_mark.line + 1, node.start_mark.column + 1


def _join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


class LoadedYAML:
    """A loaded document: `data` (plain Python values), `positions` (key path → (line, col))
    and `plain_strings` (key paths of unquoted scalars that YAML 1.1 would read as booleans)."""

    def __init__(self) -> None:
        self.data: Any = None
        self.positions: dict[str, tuple[int, int]] = {}
        self.bool_like: set[str] = set()
        self.problems: list[Problem] = []


def _expanded_size(root: yaml.Node) -> int:
    """Nodes the document has once aliases are expanded (values only, as `build` counts them),
    capped at MAX_NODES + 1. Each distinct node is sized once, so an alias bomb ("billion
    laughs": 10 aliases of 10 aliases of …) is measured in microseconds, before anything is
    built; a node that contains itself counts as too large."""
    sizes: dict[int, int] = {}

    def size(node: yaml.Node) -> int:
        found = sizes.get(id(node))
        if found is not None:
            return found
        sizes[id(node)] = MAX_NODES + 1  # seen again while being sized: a recursive alias
        if isinstance(node, yaml.SequenceNode):
            total = 1 + sum(size(item) for item in node.value)
        elif isinstance(node, yaml.MappingNode):
            total = 1 + sum(size(value) for _, value in node.value)
        else:
            total = 1
        sizes[id(node)] = min(total, MAX_NODES + 1)
        return sizes[id(node)]

    return size(root)


def _parse(text: str, file: str, problems: list[Problem]) -> yaml.Node | None:
    """The document's root node, or None when it is empty or cannot be parsed (the reason
    appended to `problems`: ``yaml-syntax`` or ``yaml-too-large``)."""
    try:
        loader = _Loader(text)
        try:
            root = loader.get_single_node()
        finally:
            loader.dispose()
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line, col = (mark.line + 1, mark.column + 1) if mark else (0, 0)
        if "nesting depth" in (exc.problem or ""):  # libyaml ≥ 0.2.6 bounds nesting itself
            problems.append(Problem("yaml-too-large", _TOO_DEEP, file, line, col))
            return None
        message = " ".join(s for s in (exc.context, exc.problem) if s) or "invalid YAML"
        problems.append(Problem("yaml-syntax", f"YAML syntax error: {message}", file, line, col))
        return None
    except RecursionError:
        problems.append(Problem("yaml-too-large", _TOO_DEEP, file, 1, 1))
        return None
    except (yaml.YAMLError, ValueError, TypeError) as exc:
        problems.append(Problem("yaml-syntax", f"YAML syntax error: {exc}", file, 1, 1))
        return None
    return root


def load_yaml(text: str, file: str) -> LoadedYAML:
    """Parse one YAML document.

    Returns a `LoadedYAML`; syntax errors, duplicate keys, unsupported tags and alias bombs are
    recorded in `.problems` (codes ``yaml-syntax``, ``duplicate-key``, ``yaml-tag``,
    ``yaml-too-large``) rather than raised. Never raises for any input string.
    """
    out = LoadedYAML()
    root = _parse(text, file, out.problems)
    if root is None:
        return out

    budget = [MAX_NODES]

    def build(node: yaml.Node, path: str) -> Any:
        budget[0] -= 1
        if budget[0] < 0:
            raise OverflowError
        out.positions.setdefault(path, _pos(node))
        if isinstance(node, yaml.ScalarNode):
            try:
                value = _scalar(node)
            except ValueError as exc:
                line, col = _pos(node)
                out.problems.append(Problem("yaml-tag", str(exc), file, line, col, path, "remove the tag"))
                return node.value
            if isinstance(value, str) and not node.style and value.lower() in _BOOL_1_1:  # plain: None, or "" from libyaml
                out.bool_like.add(path)
            return value
        if isinstance(node, yaml.SequenceNode):
            return [build(item, f"{path}[{i}]") for i, item in enumerate(node.value)]
        if isinstance(node, yaml.MappingNode):
            result: dict[str, Any] = {}
            for key_node, value_node in node.value:
                if not isinstance(key_node, yaml.ScalarNode):
                    line, col = _pos(key_node)
                    out.problems.append(
                        Problem("yaml-key", "a key must be a plain name, not a list or a mapping", file, line, col, path)
                    )
                    continue
                key = key_node.value
                sub = _join(path, key)
                if key in result:
                    line, col = _pos(key_node)
                    first = out.positions.get(sub, (0, 0))[0]
                    out.problems.append(
                        Problem("duplicate-key", f"duplicate key '{key}'", file, line, col, sub,
                                f"first defined on line {first}; keep one")
                    )
                    continue
                out.positions[sub] = _pos(key_node)
                result[key] = build(value_node, sub)
            return result
        raise ValueError(f"unexpected YAML node {node!r}")  # pragma: no cover

    try:
        if _expanded_size(root) > MAX_NODES:
            raise OverflowError
        out.data = build(root, "")
    except OverflowError:
        out.problems.append(
            Problem("yaml-too-large", f"the document expands to more than {MAX_NODES} nodes (aliases?)", file, 1, 1)
        )
        out.data = None
    except RecursionError:
        out.problems.append(Problem("yaml-too-large", _TOO_DEEP, file, 1, 1))
        out.data = None
    return out
