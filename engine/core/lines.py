"""The lines of a text file worth reading: numbered from 1, the UTF-8 byte-order mark dropped from
the first, blank ones left out (the JSON Lines readers of items and of traces share this)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator

BOM = b"\xef\xbb\xbf"


def content_lines(lines: Iterable[bytes]) -> Iterator[tuple[int, bytes]]:
    """``(line number, raw line)`` for each non-blank line of `lines` (bytes, as a binary file
    yields them), the first line's byte-order mark removed."""
    for number, raw in enumerate(lines, start=1):
        if number == 1 and raw.startswith(BOM):
            raw = raw[len(BOM):]
        if raw.strip():
            yield number, raw


__all__ = ["content_lines"]
