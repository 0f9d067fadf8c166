"""The embedded models' rules for model strings, registered with `engine.judge.model.check_model`.

``local`` and ``local-tiny`` need the llama.cpp binding (xllamacpp, the ``local`` extra);
``llamacpp/PATH.gguf`` needs a path to an existing file too; every one may carry options after
``?`` (`engine.embedded.settings.local_settings`: a known option, a whole number in range, or the
environment's value). Importing `engine.embedded` registers them (`register`), so there is one
``check_model`` with one rule set. Nothing is loaded.
"""

from __future__ import annotations

from pathlib import Path

from ..judge.model import LLAMACPP_PREFIX, LOCAL_PREFIXES, ModelError, importable, register_model_check
from .settings import local_settings

__all__ = ["check_embedded", "register"]


def check_embedded(model: str) -> None:
    """Raise `ModelError` unless the embedded model string `model` can work here: its options
    (`local_settings`), a ``llamacpp/`` path to an existing file, the binding installed."""
    try:
        local_settings(model)
    except ValueError as exc:
        raise ModelError(str(exc)) from None
    base = model.partition("?")[0]
    if base.startswith(LLAMACPP_PREFIX):
        raw = base[len(LLAMACPP_PREFIX):]
        if not raw.strip():
            raise ModelError(f"model {model!r} needs a path: 'llamacpp/PATH.gguf'")
        if not Path(raw).expanduser().is_file():
            raise ModelError(f"model {model!r}: no file at {raw!r}; give 'llamacpp/PATH.gguf' with the path of "
                             "an existing GGUF file")
    if not importable("xllamacpp"):
        raise ModelError(f"model {model!r} is an embedded model and needs the llama.cpp binding (xllamacpp), "
                         "which is not installed: pip install 'scorespec[local]'")


def register() -> None:
    """Register `check_embedded` for ``local``, ``local-tiny`` and ``llamacpp/``."""
    for prefix in (*LOCAL_PREFIXES, LLAMACPP_PREFIX):
        register_model_check(prefix, check_embedded)


register()
