"""GGUF metadata: the key/value header of a GGUF model file, read without its tensors, and the
facts the embedded judge takes from it (trained context, a control token's text)."""

from __future__ import annotations

import os
import struct
from collections.abc import Mapping, Sequence
from typing import Any, BinaryIO

from ..core.errors import LocalJudgeError

__all__ = ["read_gguf_metadata", "trained_context", "special_token_text"]

_GGUF_SCALARS = {
    0: "<B",
    1: "<b",
    2: "<H",
    3: "<h",
    4: "<I",
    5: "<i",
    6: "<f",
    7: "<?",
    10: "<Q",
    11: "<q",
    12: "<d",
}
_GGUF_STRING, _GGUF_ARRAY = 8, 9


def read_gguf_metadata(
    path: os.PathLike[str] | str,
    *,
    max_array: int = 64,
    arrays: Sequence[str] = (),
) -> dict[str, Any]:
    """Key/value metadata from a GGUF file's header (no tensors are read).

    Arrays longer than ``max_array`` items (the vocabulary, merges) are skipped
    and reported as their length (int) under ``key + ".__len__"``, unless their
    key is listed in ``arrays``. Raises LocalJudgeError if the file is not GGUF
    v2/v3 or is truncated.
    """

    def read(fh: BinaryIO, fmt: str) -> Any:
        size = struct.calcsize(fmt)
        data = fh.read(size)
        if len(data) != size:
            raise LocalJudgeError(f"{path}: truncated GGUF header")
        return struct.unpack(fmt, data)[0]

    def read_str(fh: BinaryIO) -> str:
        n = read(fh, "<Q")
        data = fh.read(n)
        if len(data) != n:
            raise LocalJudgeError(f"{path}: truncated GGUF header")
        return data.decode("utf-8", "replace")

    def read_value(fh: BinaryIO, vtype: int) -> Any:
        if vtype in _GGUF_SCALARS:
            return read(fh, _GGUF_SCALARS[vtype])
        if vtype == _GGUF_STRING:
            return read_str(fh)
        raise LocalJudgeError(f"{path}: unknown GGUF value type {vtype}")

    out: dict[str, Any] = {}
    with open(path, "rb") as fh:
        if fh.read(4) != b"GGUF":
            raise LocalJudgeError(f"{path} is not a GGUF file")
        version = read(fh, "<I")
        if version not in (2, 3):
            raise LocalJudgeError(f"{path}: unsupported GGUF version {version}")
        read(fh, "<Q")  # tensor count
        n_kv = read(fh, "<Q")
        for _ in range(n_kv):
            key = read_str(fh)
            vtype = read(fh, "<I")
            if vtype != _GGUF_ARRAY:
                out[key] = read_value(fh, vtype)
                continue
            etype = read(fh, "<I")
            count = read(fh, "<Q")
            if count <= max_array or key in arrays:
                out[key] = [read_value(fh, etype) for _ in range(count)]
                continue
            out[key + ".__len__"] = count
            if etype == _GGUF_STRING:
                for _ in range(count):
                    fh.seek(read(fh, "<Q"), os.SEEK_CUR)
            elif etype in _GGUF_SCALARS:
                fh.seek(struct.calcsize(_GGUF_SCALARS[etype]) * count, os.SEEK_CUR)
            else:
                raise LocalJudgeError(f"{path}: unsupported GGUF array of type {etype}")
    return out


def trained_context(meta: Mapping[str, Any]) -> int | None:
    """The context (tokens) the model was trained for, from ``<architecture>.context_length``
    in `read_gguf_metadata`'s result; None when absent or not a positive integer."""
    arch = meta.get("general.architecture")
    value = meta.get(f"{arch}.context_length") if arch else None
    return int(value) if isinstance(value, int) and value > 0 else None


def special_token_text(meta: Mapping[str, Any], tokens: Sequence[str]) -> str | None:
    """Text of a control token (EOS, else BOS, else padding) usable as padding
    that tokenizes to exactly one token, or None."""
    for key in ("tokenizer.ggml.eos_token_id", "tokenizer.ggml.bos_token_id", "tokenizer.ggml.padding_token_id"):
        tid = meta.get(key)
        if isinstance(tid, int) and 0 <= tid < len(tokens) and tokens[tid]:
            return tokens[tid]
    return None

