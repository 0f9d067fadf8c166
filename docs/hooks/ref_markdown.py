"""Small Markdown helpers shared by the reference renderers (pure functions on strings)."""

from __future__ import annotations

import json
import re
from typing import Any

_SPACES = re.compile(r"\s+")


_CODE_SPAN = re.compile(r"(`+)(.+?)\1")


def cell(text: Any) -> str:
    """`text` fit for one Markdown table cell: one line, ``|`` escaped outside code spans (inside
    them the table extension keeps it); empty text is an em dash."""
    value = _SPACES.sub(" ", str(text if text is not None else "")).strip()
    if not value:
        return "—"
    out, end = [], 0
    for match in _CODE_SPAN.finditer(value):
        out += [value[end:match.start()].replace("|", "\\|"), match.group(0)]
        end = match.end()
    out.append(value[end:].replace("|", "\\|"))
    return "".join(out)


def code(text: Any) -> str:
    """`text` as inline code (backticks inside are handled by a longer fence)."""
    value = str(text)
    fence = "``" if "`" in value else "`"
    pad = " " if value.startswith("`") or value.endswith("`") else ""
    return f"{fence}{pad}{value}{pad}{fence}"


def json_value(value: Any) -> str:
    """A default or example value as inline code of its JSON text (``true``, ``"hard"``, ``[]``)."""
    return code(json.dumps(value, ensure_ascii=False))


def table(header: list[str], rows: list[list[str]]) -> str:
    """A Markdown table; each cell is passed through `cell`. An empty `rows` gives ``""``."""
    if not rows:
        return ""
    lines = ["| " + " | ".join(header) + " |", "|" + " --- |" * len(header)]
    lines += ["| " + " | ".join(cell(c) for c in row) + " |" for row in rows]
    return "\n".join(lines) + "\n"


def anchor(text: str) -> str:
    """The id MkDocs' toc extension gives a heading of `text` (lower case, dashes; punctuation dropped)."""
    slug = re.sub(r"[^\w\s-]", "", text).strip().lower()
    return re.sub(r"[-\s]+", "-", slug)


def first_paragraph(doc: str | None) -> str:
    """The first paragraph of a docstring, on one line (``""`` for none)."""
    return " ".join((doc or "").strip().split("\n\n", 1)[0].split())


_SECTION = re.compile(r"^(Args|Arguments|Parameters|Returns|Yields|Raises|Note|Notes|Example|Examples):\s*$")
_ENTRY = re.compile(r"^([\w.*]+)(?: \(([^)]*)\))?:\s+(.*)$")


def _section_lines(title: str, block: list[str]) -> list[str]:
    """A Google-style section's indented `block` as Markdown: ``name: text`` entries as a list,
    anything else as one paragraph."""
    entries: list[list[str]] = []
    indent = min((len(b) - len(b.lstrip()) for b in block if b.strip()), default=0)
    for line in block:
        text = line[indent:]
        match = _ENTRY.match(text) if text and not text[0].isspace() else None
        if match and title not in ("Returns", "Yields", "Note", "Notes", "Example", "Examples"):
            entries.append([f"- {code(match.group(1))}: {match.group(3)}"])
        elif entries and text.strip():
            entries[-1].append(text.strip())
        elif text.strip():
            entries.append([text.strip()])
    if title in ("Returns", "Yields", "Note", "Notes") or not all(e[0].startswith("- ") for e in entries):
        return [f"**{title}**: " + " ".join(" ".join(e) for e in entries), ""]
    return [f"**{title}**", "", *(" ".join(e) for e in entries), ""]


def docstring_markdown(doc: str) -> str:
    """A docstring as Markdown: its Google-style sections (``Args:``, ``Returns:``, ``Raises:``…,
    each followed by indented lines) made a bold title with a list or a paragraph; the rest as
    written (reST double backticks read as code in Markdown too)."""
    lines, out, i = doc.strip().splitlines(), [], 0
    while i < len(lines):
        match = _SECTION.match(lines[i])
        if not match:
            out.append(lines[i])
            i += 1
            continue
        block, i = [], i + 1
        while i < len(lines) and (not lines[i].strip() or lines[i].startswith((" ", "\t"))):
            block.append(lines[i])
            i += 1
        out += _section_lines(match.group(1), block)
    return "\n".join(out).strip()
