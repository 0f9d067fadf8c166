"""Human labels kept beside a dataset: ``DATA.labels.jsonl`` for ``DATA.jsonl`` (`labels_path`).

One JSON object a line, appended as each label is given, the last line for an id winning::

    {"id": "item-3", "label": "fail", "who": "ana", "when": "2026-01-31T09:12:44.120Z"}

``id`` is the item's id as the dataset gives it, ``label`` the human label (the scorer's positive
or negative value, a label from a list, or a 1–5 grade), ``who`` the user, ``when`` ISO 8601 UTC.
A ``"label": null`` line takes an item's label back. ``calibrate``, ``compare`` and ``align``
read such a file with ``--labels FILE`` (`with_labels`: each item's label laid into its
``label`` field). `label_queue` orders the items still to label: nearest the scorer's cut-off
first, where the judge is least sure.
"""

from __future__ import annotations

import getpass
import json
from collections.abc import Iterable, Mapping
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from ..core.errors import UserError
from ..run.items import item_key

__all__ = ["LabelsFileError", "LABEL_FIELD", "add_label", "label_queue", "labels_path", "read_labels", "with_labels"]

LABEL_FIELD = "label"


class LabelsFileError(UserError, ValueError):
    """A labels file that cannot be read, naming its file and line."""


def labels_path(data: Path) -> Path:
    """The labels file of the dataset `data`: ``items.jsonl`` → ``items.labels.jsonl``."""
    return data.with_name(f"{data.stem}.labels.jsonl")


def _user() -> str:
    try:
        return getpass.getuser()
    except (OSError, KeyError):  # no user name known to the system
        return "unknown"


def add_label(path: Path, item_id: Any, label: Any, who: str | None = None) -> dict[str, Any]:
    """Append one label line to `path` (made when missing); the line written. Raises
    `ValueError` for a label that is not text, a number, a boolean or None, or is blank text (None
    takes a label back)."""
    if label is not None and not isinstance(label, (str, int, float, bool)):
        raise ValueError(f"a label is text, a number or a boolean, not {type(label).__name__}")
    if isinstance(label, str) and not label.strip():
        raise ValueError("a label is not blank (send null to take an item's label back)")
    line = {"id": item_id, "label": label, "who": who or _user(),
            "when": datetime.now(timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")}
    with path.open("a", encoding="utf-8") as file:
        file.write(json.dumps(line, ensure_ascii=False) + "\n")
    return line


def read_labels(path: Path) -> dict[str, Any]:
    """Item key (`engine.run.items.item_key`) → its label, the last line for an id winning, taken
    back by a null label; {} for a missing file. Raises `LabelsFileError` naming the file and line
    of a line that is no JSON object with an ``id`` and a ``label``."""
    found: dict[str, Any] = {}
    if not path.is_file():
        return found
    for number, raw in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not raw.strip():
            continue
        try:
            line = json.loads(raw)
        except json.JSONDecodeError as exc:
            raise LabelsFileError(f"{path}:{number}: not JSON ({exc.msg})") from None
        if not isinstance(line, dict) or "id" not in line or "label" not in line:
            raise LabelsFileError(f"{path}:{number}: a labels line is an object with an id and a label")
        key = item_key(line["id"])
        if line["label"] is None:
            found.pop(key, None)
        else:
            found[key] = line["label"]
    return found


def with_labels(items: Iterable[Mapping[str, Any]], labels: Mapping[str, Any],
                field: str = LABEL_FIELD) -> list[dict[str, Any]]:
    """`items` with each labelled one's label set in `field`, replacing what the dataset held; the
    others without `field` (unlabelled: the labels file is the only source of labels, so a label
    the dataset held is never mixed with the file's)."""
    out = []
    for item in items:
        key = item_key(item.get("id"))
        out.append({**item, field: labels[key]} if key in labels else
                   {name: value for name, value in item.items() if name != field})
    return out


def label_queue(results: Iterable[Mapping[str, Any]], labels: Mapping[str, Any],
                cutoff: float | None) -> list[str]:
    """The ids (item keys) of the scored results still unlabelled, the one whose score is nearest
    `cutoff` first (ties in the results' order); without a cut-off, in the results' order."""
    pending = [(i, r) for i, r in enumerate(results)
               if r.get("score") is not None and item_key(r.get("id")) not in labels]
    if cutoff is not None:
        pending.sort(key=lambda pair: (abs(float(pair[1]["score"]) - cutoff), pair[0]))
    return [item_key(r.get("id")) for _, r in pending]
