"""Character-level textual difference between two texts.

Pure functions with no dependency on the rest of the engine. The scorer spec
that uses them turns the result into a score as ``ratio * confidence * scale``
(the formula of Mastra's textual-difference scorer documentation); that product
is deliberately *not* computed here.
"""

from __future__ import annotations

from rapidfuzz.distance import Indel

__all__ = ["textual_difference", "MAX_ALIGNMENT_CELLS"]

#: The alignment keeps a bit matrix of len(a) × len(b) bits; refuse pairs that would need more
#: than about 300 MB instead of exhausting memory (two 200,000-character texts need ~4.7 GB).
MAX_ALIGNMENT_CELLS = 2_500_000_000


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
    - ``changes``: the number of maximal differing regions in that same
      optimal LCS alignment, i.e. the gaps between its matching blocks. Each
      region is one insertion, one deletion or one replacement (a deletion
      directly followed by an insertion), so ``"fox" -> "cat"`` inside an
      otherwise equal text is 1 change, as ``difflib``'s ``get_opcodes`` would
      count it. 0 if and only if the texts are equal. Note that when several
      optimal alignments exist the count follows rapidfuzz's choice, so it
      may differ by a few between ``(a, b)`` and ``(b, a)``.
    - ``lengthDiff = |la - lb| / max(la, lb)`` (0.0 when both are empty), in
      [0, 1].
    - ``confidence = 1 - lengthDiff``, in [0, 1].

    Cost: one rapidfuzz ``Indel.editops`` call (bit-parallel LCS,
    O(la * lb / 64) word operations); the ratio is derived from the number of
    edit operations (``LCS = (la + lb - len(editops)) / 2``) and the change
    count from the matching blocks of the same alignment, so no second
    alignment is computed. The alignment keeps a bit matrix of about
    ``la * lb / 8`` bytes (after rapidfuzz strips the common prefix and
    suffix): measured here about 10-25 microseconds per pair of 500-character
    texts, 6-13 ms and +12.5 MB per pair of 10,000-character texts, but
    0.6 s / +300 MB at 50,000 and 2.4 s / +1.2 GB at 100,000 characters each,
    so callers should cap the length of what they compare.

    Args:
        reference: the expected text.
        candidate: the text being scored.

    Returns:
        ``{"ratio": float, "changes": int, "lengthDiff": float,
        "confidence": float}``; the floats are in [0, 1] and never NaN.

    Raises:
        TypeError: if either argument is not a ``str``.
        ValueError: if ``len(reference) * len(candidate)`` exceeds `MAX_ALIGNMENT_CELLS`
            (the alignment's memory, ~len(a)·len(b)/8 bytes, would pass ~300 MB).
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

    if la * lb > MAX_ALIGNMENT_CELLS:
        raise ValueError(
            f"texts of {la:,} and {lb:,} characters are too long to align: the alignment would need about "
            f"{la * lb // 8 // 2**20:,} MB (the limit is {MAX_ALIGNMENT_CELLS // 8 // 2**20:,} MB, e.g. two texts "
            "of 50,000 characters)"
        )
    ops = Indel.editops(reference, candidate)
    total = la + lb
    lcs = (total - len(ops)) // 2
    ratio = 2 * lcs / total

    # Matching blocks of the same alignment, ending with the (la, lb, 0)
    # sentinel. Two consecutive real blocks always have at least one edit
    # operation between them, so the differing regions are the gaps between
    # blocks plus a leading and a trailing one where present.
    blocks = ops.as_matching_blocks()
    n_real = len(blocks) - 1
    if n_real <= 0:
        changes = 1  # no common character: one replacement of the whole text
    else:
        first = blocks[0]
        last = blocks[n_real - 1]
        changes = n_real - 1
        if first.a != 0 or first.b != 0:
            changes += 1
        if last.a + last.size != la or last.b + last.size != lb:
            changes += 1

    return {
        "ratio": ratio,
        "changes": changes,
        "lengthDiff": length_diff,
        "confidence": confidence,
    }
