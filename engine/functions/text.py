"""Character-level textual difference between two texts.

Pure functions with no dependency on the rest of the engine. The scorer spec
that uses them turns the result into a score as ``ratio * confidence * scale``
(the formula of Mastra's textual-difference scorer documentation); that product
is deliberately *not* computed here.
"""

from __future__ import annotations

from rapidfuzz.distance import Indel

from .rule_function import rule_function

__all__ = ["MAX_ALIGNMENT_BYTES", "MAX_ALIGNMENT_CELLS", "TEXTUAL_DIFFERENCE", "alignment_bytes",
           "textual_difference"]

#: One alignment keeps a bit matrix of about len(a) × len(b) bits; a pair past this many cells
#: costs more than the distance's time budget (4 × this many cells) to compare whole.
MAX_ALIGNMENT_CELLS = 2_500_000_000
#: The memory one rapidfuzz alignment may take (`alignment_bytes`, about 298 MB); a piece that
#: would need more is refused instead of exhausting memory (two 200,000-character texts: ~4.7 GB).
MAX_ALIGNMENT_BYTES = MAX_ALIGNMENT_CELLS // 8
_EDIT_BYTES = 24  # one edit operation rapidfuzz keeps: its kind and two positions
#: Pairs larger than this (about 2,000 × 2,000 characters) are aligned piecewise, cut where an
#: optimal alignment is proven to pass (see `_cut`).
SPLIT_CELLS = 4_000_000
_ANCHOR = 16  # characters of the exact common run a cut is placed at
_TRIES = 8  # anchors tried per split before a piece is aligned whole


def textual_difference(reference: str, candidate: str) -> dict:
    """Compare two texts character by character.

    Lengths are counted in Python code points (``len(str)``); no Unicode
    normalisation, case folding or whitespace handling is applied, so
    ``"é"`` (one code point) and ``"e\\u0301"`` (two) differ.

    Formulas (``la = len(reference)``, ``lb = len(candidate)``, ``LCS`` = the
    length of a longest common subsequence of the two texts):

    - ``ratio = 2 * LCS / (la + lb)``: the normalised Indel similarity
      (``rapidfuzz.distance.Indel.normalized_similarity``, identical to
      ``difflib.SequenceMatcher.ratio`` when the latter finds a true LCS).
      1.0 for identical texts, including two empty ones; 0.0 when exactly one
      text is empty or they share no character. Symmetric.
    - ``changes``: the number of maximal differing regions in an optimal LCS
      alignment, i.e. the gaps between its matching blocks. Each
      region is one insertion, one deletion or one replacement (a deletion
      directly followed by an insertion), so ``"fox" -> "cat"`` inside an
      otherwise equal text is 1 change, as ``difflib``'s ``get_opcodes`` would
      count it. 0 if and only if the texts are equal (see below for ties).
    - ``lengthDiff = |la - lb| / max(la, lb)`` (0.0 when both are empty), in
      [0, 1].
    - ``confidence = 1 - lengthDiff``, in [0, 1].

    Cost: up to ``SPLIT_CELLS`` (about 2,000 × 2,000 characters), one rapidfuzz
    ``Indel.editops`` call (bit-parallel LCS, O(la * lb / 64) word operations, a bit matrix of
    about ``la * lb / 8`` bytes) gives both the ratio and the blocks. Larger pairs: the
    distance is computed in a band that widens until it holds it, then the pair is cut where
    an optimal alignment provably passes (an exact 16-character run near the middle whose two
    sides' distances add up to the whole's) and each side is aligned the same way, so the
    ratio is exact and the blocks form an optimal alignment; where no cut proves optimal the
    piece is aligned whole. Measured here: 10-25 microseconds per pair of 500-character texts,
    5-8 ms and +0.5 MB per pair of 10,000-character texts that mostly agree (15-20 ms and
    +12 MB aligned whole), 0.8 s for two 115,000-character texts. Unrelated long texts cannot
    be cut: aligned whole, one that would take more than `MAX_ALIGNMENT_BYTES`
    (`alignment_bytes`: two unrelated texts of 50,000 characters) is refused rather than
    exhausting memory; a short text against a long one (9 characters against 1,000,000: 25 MB)
    is aligned whole.

    When several optimal alignments exist, ``changes`` follows the one found (rapidfuzz's
    choice within each piece), so it may differ by a few between ``(a, b)`` and ``(b, a)``.

    Args:
        reference: the expected text.
        candidate: the text being scored.

    Returns:
        ``{"ratio": float, "changes": int, "lengthDiff": float,
        "confidence": float}``; the floats are in [0, 1] and never NaN.

    Raises:
        TypeError: if either argument is not a ``str``.
        ValueError: if a piece that cannot be cut would take more than `MAX_ALIGNMENT_BYTES`
            (~300 MB) to align whole, or a pair of more than 4 × `MAX_ALIGNMENT_CELLS` cells
            differs by more edits than a band of that many cells holds; the message names both
            lengths and the memory needed, always above the limit it names.
    """
    if not isinstance(reference, str) or not isinstance(candidate, str):
        raise TypeError(
            "textual_difference expects two str, got "
            f"{type(reference).__name__} and {type(candidate).__name__}"
        )
    la = len(reference)
    lb = len(candidate)
    longest = la if la >= lb else lb
    length_diff = abs(la - lb) / longest if longest else 0.0
    confidence = 1.0 - length_diff

    if reference == candidate:
        return {"ratio": 1.0, "changes": 0, "lengthDiff": 0.0, "confidence": 1.0}
    if la == 0 or lb == 0:
        # One text is empty: a single insertion (or deletion) of the other.
        return {"ratio": 0.0, "changes": 1, "lengthDiff": length_diff, "confidence": confidence}

    distance, changes = _alignment(reference, candidate)
    total = la + lb
    ratio = (total - distance) / total  # 2·LCS / (la + lb), LCS = (total - distance) / 2

    return {"ratio": ratio, "changes": changes, "lengthDiff": length_diff, "confidence": confidence}


def _alignment(reference: str, candidate: str) -> tuple[int, int]:
    """(Indel distance, changes) of two non-empty, different texts (see `textual_difference`).
    Raises `ValueError` for a pair too long to align."""
    la, lb = len(reference), len(candidate)
    if la * lb <= SPLIT_CELLS:
        # One alignment gives the distance and the matching blocks, ending with the (la, lb, 0)
        # sentinel. Two consecutive blocks always have an edit between them, so the differing
        # regions are the gaps between blocks plus a leading and a trailing one where present.
        ops = Indel.editops(reference, candidate)
        distance = len(ops)
        matches = ops.as_matching_blocks()
        n_real = len(matches) - 1
        if n_real <= 0:
            changes = 1  # no common character: one replacement of the whole text
        else:
            first, last = matches[0], matches[n_real - 1]
            changes = n_real - 1 + (first.a != 0 or first.b != 0) + (last.a + last.size != la or last.b + last.size != lb)
    else:
        try:
            distance = _distance(reference, candidate)
            changes = _gaps(_blocks(reference, candidate, distance, 0, 0, []), la, lb)
        except _TooLong as exc:
            raise ValueError(_too_long(la, lb, exc)) from None
    return distance, changes


def alignment_bytes(la: int, lb: int, distance: int) -> int:
    """The memory (bytes) one rapidfuzz alignment of texts of `la` and `lb` characters whose
    Indel distance is `distance` takes: its bit matrix (a 64-bit word per 64 characters of the
    first text, for each character of the second) and its edit operations (one per insertion
    or deletion, `_EDIT_BYTES` each). 9 characters against 1,000,000: about 25 MB."""
    return -(-la // 64) * 8 * lb + _EDIT_BYTES * distance


def _too_long(la: int, lb: int, exc: _TooLong) -> str:
    """The refusal of a pair of `la` and `lb` characters: why it cannot be cut, and the memory
    aligning the piece whole would need (rounded up) against the limit (rounded down), so the
    need shown always exceeds the limit shown."""
    need = -(-exc.need // 2**20)
    limit = f"the limit is {MAX_ALIGNMENT_BYTES // 2**20:,} MB, e.g. two unrelated texts of 50,000 characters"
    why = (f"they differ by more than {exc.differ_by:,} insertions and deletions, and aligning them"
           if exc.differ_by is not None
           else f"a part of {exc.piece_a:,} × {exc.piece_b:,} characters has no common run to cut it at, and "
           "aligning it")
    return f"texts of {la:,} and {lb:,} characters are too long to align: {why} whole would need about {need:,} MB ({limit})"


_SHARE = {"type": "number", "minimum": 0, "maximum": 1}
TEXTUAL_DIFFERENCE = rule_function(
    textual_difference,
    args={"reference": {"type": "string"}, "candidate": {"type": "string"}},
    result={"type": "object", "additionalProperties": False,
            "required": ["ratio", "changes", "lengthDiff", "confidence"],
            "properties": {"ratio": _SHARE, "changes": {"type": "integer", "minimum": 0}, "lengthDiff": _SHARE,
                           "confidence": _SHARE}},
    limit="texts that align within about 300 MB: any that mostly agree, a short text against a long one "
          "(9 characters against 1,000,000: 25 MB); unrelated texts up to about 50,000 characters each",
)
"""`textual_difference` as the registry holds it, with its declared arguments and result."""


def _gaps(blocks: list[tuple[int, int, int]], la: int, lb: int) -> int:
    """The differing regions between matching `blocks` of texts of `la` and `lb` characters:
    a gap before a block, between blocks (blocks that touch across a cut are one), and after."""
    if not blocks:
        return 1  # no common character: one replacement of the whole text
    gaps = end_a = end_b = 0
    for a, b, size in blocks:
        if a != end_a or b != end_b:
            gaps += 1
        end_a, end_b = a + size, b + size
    return gaps + (end_a != la or end_b != lb)


class _TooLong(Exception):
    """A piece of `piece_a` × `piece_b` characters that cannot be aligned within the limit:
    aligned whole it would take `need` bytes (`alignment_bytes`, more than `MAX_ALIGNMENT_BYTES`);
    `differ_by` set when the whole pair differs by more than that many edits."""

    def __init__(self, piece_a: int, piece_b: int, need: int, differ_by: int | None = None):
        self.piece_a, self.piece_b, self.need, self.differ_by = piece_a, piece_b, need, differ_by


def _distance(a: str, b: str) -> int:
    """The Indel distance, computed in a band that doubles until the distance fits in it
    (rapidfuzz's banded LCS: a third to a half of the unbanded time for texts that mostly
    agree). Raises `_TooLong` when the whole pair (la × lb cells) and the band its distance
    needs both cost more than 4 × `MAX_ALIGNMENT_CELLS` cells (~0.5 s)."""
    la, lb = len(a), len(b)
    # a band's cost grows with its width up to the whole pair's: a pair within the budget is
    # compared whole if need be (9 characters against a million: a band as wide as the pair)
    budget = 4 * MAX_ALIGNMENT_CELLS
    most = la + lb if la * lb <= budget else min(la + lb, budget // max(la, lb))
    cutoff = abs(la - lb) + (la + lb) // 32 + 64
    while True:
        cutoff = min(cutoff, most)
        distance = Indel.distance(a, b, score_cutoff=cutoff)
        if distance <= cutoff:
            return distance
        if cutoff == most:
            raise _TooLong(la, lb, alignment_bytes(la, lb, most), most)
        cutoff *= 2


def _cut(a: str, b: str, distance: int) -> tuple[int, int, int, int] | None:
    """``(i, j, d1, d2)`` with ``d1 = d(a[:i], b[:j])``, ``d2 = d(a[i:], b[j:])`` and
    ``d1 + d2 == distance`` (Indel distances): optimal alignments of the two halves make an
    optimal alignment of the whole. Tried at exact `_ANCHOR`-character runs near the middle
    of `a` that occur once in `b` within `distance` of the same diagonal (a run repeated there,
    as in repetitive text, could put one change on both sides of the cut); None when none
    proves optimal."""
    la, lb = len(a), len(b)
    for k in range(_TRIES):
        i = la // 2 + (k - _TRIES // 2) * 2 * _ANCHOR
        if i <= 0 or i + _ANCHOR > la:
            continue
        anchor, start, end = a[i:i + _ANCHOR], max(1, i - distance), min(lb, i + (lb - la) + distance + _ANCHOR)
        j = b.find(anchor, start, end)
        if j == -1 or b.find(anchor, j + 1, end) != -1:
            continue  # absent, or repeated: in repetitive text a cut could split one change in two
        d1 = Indel.distance(a[:i], b[:j], score_cutoff=distance)
        if d1 > distance:
            continue
        d2 = Indel.distance(a[i:], b[j:], score_cutoff=distance - d1)
        if d1 + d2 == distance:
            return i, j, d1, d2
    return None


def _blocks(a: str, b: str, distance: int, a0: int, b0: int, out: list) -> list:
    """Appends to `out` the matching blocks ``(position in a, position in b, size)`` of an
    optimal alignment of `a` and `b` (whose Indel distance is `distance`), offset by `a0`,
    `b0`. Pairs above `SPLIT_CELLS` are cut at proven points (`_cut`), so each rapidfuzz
    alignment stays small. Raises `_TooLong` for a piece that cannot be cut and whose alignment
    would take more than `MAX_ALIGNMENT_BYTES` (`alignment_bytes`)."""
    la, lb = len(a), len(b)
    if la * lb > SPLIT_CELLS and distance > 0:
        cut = _cut(a, b, distance)
        if cut is not None:
            i, j, d1, d2 = cut
            _blocks(a[:i], b[:j], d1, a0, b0, out)
            return _blocks(a[i:], b[j:], d2, a0 + i, b0 + j, out)
        need = alignment_bytes(la, lb, distance)
        if need > MAX_ALIGNMENT_BYTES:
            raise _TooLong(la, lb, need)
    out.extend((a0 + m.a, b0 + m.b, m.size) for m in Indel.editops(a, b).as_matching_blocks() if m.size)
    return out
