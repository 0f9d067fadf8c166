"""``--labels FILE`` for ``calibrate``, ``compare`` and ``align``: human labels kept apart from the
dataset, in the JSON Lines file ``scorespec studio`` writes beside it (`engine.studio.labels`:
``{"id", "label", "who", "when"}`` a line, the last line for an id winning). Each item of
``--data`` whose id has a label gets it in its label field (``--label-field``), replacing what
the dataset held there; the items are then given to the command as a list."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Optional

import typer

from .app import fail

__all__ = ["LabelsFile", "labelled_data"]

LabelsFile = Annotated[Optional[Path], typer.Option(
    "--labels", metavar="FILE", help="Human labels from a labels file (JSON Lines: id, label, who, when; the one "
    "`scorespec studio` writes beside a dataset), laid into each item's label field.")]


def labelled_data(data: Optional[Path], labels: Optional[Path], label_field: str) -> Any:
    """`data` as the command reads it: the path itself without `labels`, else its items with the
    labels file's labels laid into `label_field`. Exits 2 for a missing or unreadable labels
    file, ``--labels`` without ``--data``, or a labels file naming none of the data's items."""
    if labels is None:
        return data
    if data is None:
        fail("--labels FILE needs --data FILE: the labels name the data's items by id")
    from ..core.errors import UserError
    from ..run.datasets import iter_items
    from ..run.items import item_key
    from ..studio.labels import read_labels, with_labels

    if not labels.is_file():
        fail(f"--labels {labels}: no such file")
    try:
        found = read_labels(labels)
        items = list(iter_items(data))
    except UserError as exc:
        fail(str(exc))
    keys = {item_key(item.get("id")) for item in items}
    if found and not keys & set(found):
        fail(f"--labels {labels}: none of its {len(found)} labelled id(s) is an item of {data} "
             f"(e.g. {next(iter(found))!r})")
    return with_labels(items, found, label_field)
