"""A prompt stage's ``pages`` lists: a list the judge fills to its schema's ``maxItems`` is asked
for again, page by page, so a long answer's list is judged whole.

A judge held to the answer schema (the embedded one, a hosted model in strict JSON Schema mode)
stops a list at ``maxItems``, the bound that keeps its answer within ``max_tokens``. A page whose
list holds exactly that many items may therefore have stopped short; the stage asks again, in the
same conversation (the judge's own answer, then `next_page_message`), for the items after those
already listed. A field is done when its page comes back short, adds nothing new (a judge
repeating itself), or comes back longer than the bound (a judge not held to the schema, whose
list is whole); the stage is done when every field is, or after `MAX_PAGES` pages (a warning then
says the list may go on). An answer below the bound costs its one call, as before.

The answer the stage reads holds each field's items of every page in order, an item repeated
from an earlier page left out; its other fields are the first page's. Imports only the standard
library.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

__all__ = ["MAX_PAGES", "Pages", "next_page_message"]

#: The most pages (judge calls) one question's lists are asked in.
MAX_PAGES = 20


def _bound(schema: Mapping[str, Any], name: str) -> int | None:
    node = (schema.get("properties") or {}).get(name)
    bound = node.get("maxItems") if isinstance(node, Mapping) else None
    return bound if isinstance(bound, int) and not isinstance(bound, bool) and bound > 0 else None


def next_page_message(fields: Sequence[str], counts: Mapping[str, int]) -> str:
    """The user message asking for the next page of `fields` (`counts`: how many items of each
    were listed so far)."""
    named = " and ".join(f"`{name}` ({counts[name]} so far)" for name in fields)
    several = len(fields) > 1
    return (f"Your answer filled {named}: {'each list holds' if several else 'the list holds'} as many items as "
            "one answer may. Go on with the same task and answer in the same JSON form, listing in "
            f"{'each of ' if several else ''}{' and '.join(f'`{name}`' for name in fields)} only the items that "
            "come after those already listed, none of them again, and an empty list when there are no more.")


class Pages:
    """One question's paged lists: `fields` of an answer to `schema` (its per-item JSON Schema,
    each field an array with ``maxItems``), gathered from the first page's `answer` and each
    later page given to `add`."""

    def __init__(self, schema: Mapping[str, Any], fields: Sequence[str], answer: Any):
        self.answer = dict(answer) if isinstance(answer, Mapping) else answer
        self.bounds = {name: bound for name in fields if (bound := _bound(schema, name)) is not None}
        self.pages = 1
        self.open = [name for name in self.bounds if self._full(answer, name)] \
            if isinstance(answer, Mapping) else []
        if isinstance(self.answer, dict):
            for name in self.bounds:
                if isinstance(self.answer.get(name), list):
                    self.answer[name] = list(self.answer[name])

    def _full(self, page: Mapping[str, Any], name: str) -> bool:
        value = page.get(name)
        return isinstance(value, list) and len(value) == self.bounds[name]

    @property
    def wanted(self) -> bool:
        """Whether another page should be asked for (a field is still open, `MAX_PAGES` not reached)."""
        return bool(self.open) and self.pages < MAX_PAGES

    @property
    def cut_short(self) -> bool:
        """Whether the pages ran out while a field was still full (the list may go on)."""
        return bool(self.open) and self.pages >= MAX_PAGES

    def message(self) -> str:
        """The message asking for the next page of the open fields."""
        return next_page_message(self.open, self.listed())

    def add(self, page: Any) -> None:
        """A later page: each open field's items not listed before appended; a field stays open
        while its page is full and added something."""
        self.pages += 1
        still_open = []
        for name in self.open:
            items = page.get(name) if isinstance(page, Mapping) else None
            if not isinstance(items, list):
                continue
            known = self.answer[name]
            new = [item for item in items if item not in known]
            known.extend(new)
            if new and len(items) == self.bounds[name]:
                still_open.append(name)
        self.open = still_open

    def listed(self) -> dict[str, int]:
        """How many items each paged field holds so far (a field that is no list left out)."""
        if not isinstance(self.answer, Mapping):
            return {}
        return {name: len(value) for name in self.bounds if isinstance(value := self.answer.get(name), list)}
