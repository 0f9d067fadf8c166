"""A resolved spec for people: the document merged over what it extends, each value with the
file and line that wrote it (``scorespec render SPEC --resolved``).

The text is YAML that reads back to the merged values: scalars are written as JSON (a JSON
scalar is a YAML flow scalar), and each line ends with a comment ``# FILE:LINE``.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from .catalog import builtin_root
from .document import Document
from .models import Spec

_PLAIN_KEY = re.compile(r"^[A-Za-z_$][A-Za-z0-9_$-]*$")


def _where(doc: Document, key_path: str) -> str:
    found = doc.positions.get(key_path)
    if found is None:
        return ""
    file = Path(found.file)
    for root, label in ((builtin_root().resolve(), "<builtin>"), (Path.cwd().resolve(), "")):
        try:
            rel = file.resolve().relative_to(root).as_posix()
        except ValueError:
            continue
        file = Path(f"{label}/{rel}" if label else rel)
        break
    return f"  # {file.as_posix()}:{found.line}"


def _key(key: str) -> str:
    return key if _PLAIN_KEY.match(key) and key not in ("true", "false", "null", "yes", "no", "on", "off") \
        else json.dumps(key, ensure_ascii=False)


def _scalar(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


def _lines(doc: Document, value: Any, path: str, indent: int, out: list[str]) -> None:
    pad = " " * indent
    if isinstance(value, dict):
        for key, item in value.items():
            sub = f"{path}.{key}" if path else key
            if isinstance(item, (dict, list)) and item:
                out.append(f"{pad}{_key(key)}:{_where(doc, sub)}")
                _lines(doc, item, sub, indent + 2, out)
            else:
                out.append(f"{pad}{_key(key)}: {_scalar(item)}{_where(doc, sub)}")
    else:
        for i, item in enumerate(value):
            sub = f"{path}[{i}]"
            if isinstance(item, (dict, list)) and item:
                out.append(f"{pad}-{_where(doc, sub)}")
                _lines(doc, item, sub, indent + 2, out)
            else:
                out.append(f"{pad}- {_scalar(item)}{_where(doc, sub)}")


def render_resolved(doc: Document) -> str:
    """`doc`'s values as YAML, one value a line, each with ``# FILE:LINE`` of where it was
    written (built-in files as ``<builtin>/…``, files under the current folder relative)."""
    head = f"# {doc.chain[0] if doc.chain else doc.path.stem}"
    if len(doc.chain) > 1:
        head += " extends " + " → ".join(doc.chain[1:])
    out = [head]
    data = doc.data if isinstance(doc.data, dict) else {}
    order = {name: i for i, name in enumerate(Spec.model_fields)}  # the format's own order at the top
    _lines(doc, dict(sorted(data.items(), key=lambda kv: order.get(kv[0], len(order)))), "", 0, out)
    return "\n".join(out) + "\n"


__all__ = ["render_resolved"]
