"""How an embedded model runs: its slots, threads, polling and context per slot.

A model string may carry options after ``?``, as in a URL query: ``local?slots=2&threads=1``,
``llamacpp/~/models/judge.gguf?poll=0``. Each setting is taken from, first found wins: the
model string's option, the environment (``SCORESPEC_LOCAL_SLOTS``, ``SCORESPEC_LOCAL_THREADS``,
``SCORESPEC_LOCAL_POLL``, ``SCORESPEC_LOCAL_CONTEXT``), the default below.

- ``slots`` (1..16): sequences the model decodes at once (llama.cpp's ``n_parallel``, with
  continuous batching). Concurrent judge calls up to this number run together; more wait.
- ``threads`` (1..256): CPU threads for reading prompts and decoding (default: the CPUs this
  process may use that no other embedded model of this user has taken, at least 1:
  `engine.embedded.jobs`; two models sharing cores slow each other down many times over).
- ``poll`` (0..100): how long llama.cpp's worker threads spin waiting for work before they sleep
  (0: they sleep at once; 50: llama.cpp's own default). Spinning threads take cores another
  process needs: on a shared machine, 0.
- ``context`` (tokens, 256..): each slot's context, prompt and answer together (default 4096, or
  the model's trained context when smaller). The model holds ``slots × context`` tokens of
  state (Qwen2.5-1.5B: about 28 KB a token).

Nothing here loads a model; `engine.embedded.llama` reads the settings when it loads one.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from urllib.parse import unquote

from ..core import environment
from ..core.errors import did_you_mean

__all__ = ["LocalSettings", "DEFAULT_SLOTS", "DEFAULT_POLL", "ENV", "split_options", "local_settings",
           "available_cpus"]

#: Sequences decoded at once by default. Measured on 2 cores (the README's main job, Qwen2.5 1.5B):
#: 1 slot 67-73 s, 2 slots 66-93 s, 3 slots 118 s: reading prompts is compute-bound there, and
#: batching gains nothing; a machine with more cores may gain from 2 or more.
DEFAULT_SLOTS = 1
#: Worker threads' spin before sleeping, by default (0..100; llama.cpp's own default is 50).
DEFAULT_POLL = 0
#: Each slot's context by default, unless the model's trained context is smaller (tokens).
DEFAULT_CONTEXT = 4096

#: The environment variable of each setting.
ENV = {"slots": "SCORESPEC_LOCAL_SLOTS", "threads": "SCORESPEC_LOCAL_THREADS", "poll": "SCORESPEC_LOCAL_POLL",
       "context": "SCORESPEC_LOCAL_CONTEXT"}
_RANGES = {"slots": (1, 16), "threads": (1, 256), "poll": (0, 100), "context": (256, 1 << 20)}


def available_cpus() -> int:
    """The CPUs this process may run on (its affinity), at least 1."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):  # pragma: no cover - non-Linux
        return max(1, os.cpu_count() or 1)


@dataclass(frozen=True)
class LocalSettings:
    """The settings one embedded model is loaded with. `slots`: sequences at once; `threads`:
    CPU threads, None for the default (chosen when the model loads: `engine.embedded.jobs`);
    `poll`: 0..100; `context`: tokens per slot, None for the default (4096, or the model's
    trained context when smaller)."""

    slots: int = DEFAULT_SLOTS
    threads: int | None = None
    poll: int = DEFAULT_POLL
    context: int | None = None


def split_options(model: str) -> tuple[str, dict[str, str]]:
    """``("local", {"slots": "2"})`` for ``local?slots=2``: the model without its options, and
    the options as given (text). Raises ValueError for an option without ``=`` or given twice."""
    base, mark, query = model.partition("?")
    if not mark:
        return model, {}
    options: dict[str, str] = {}
    for part in query.split("&"):
        if "=" not in part:
            raise ValueError(f"model {model!r}: option {part!r} needs a value (NAME=VALUE, e.g. slots=2)")
        name, value = (unquote(text.strip()) for text in part.split("=", 1))
        if name in options:
            raise ValueError(f"model {model!r}: option {name!r} is given twice")
        options[name] = value
    return base, options


def _integer(name: str, text: str, where: str) -> int:
    low, high = _RANGES[name]
    try:
        value = int(text.strip())
    except ValueError:
        raise ValueError(f"{where}: {name} must be a whole number from {low} to {high}, not {text!r}") from None
    if not low <= value <= high:
        raise ValueError(f"{where}: {name} must be from {low} to {high}, not {value}")
    return value


def local_settings(model: str, environ: Mapping[str, str] | None = None) -> LocalSettings:
    """The settings for the embedded model string `model` (options, else the environment —
    `environ`, default this process's, read through `engine.core.environment` —, else the
    defaults; see the module). Raises ValueError naming the model or the variable for an
    unknown option (with the nearest name), or a value that is not a whole number in range."""
    _, options = split_options(model)
    for name in options:
        if name not in ENV:
            hint = did_you_mean(name, list(ENV))
            raise ValueError(f"model {model!r}: unknown option {name!r}"
                             + (f" ({hint})" if hint.startswith("did you mean") else f"; known: {', '.join(ENV)}"))
    values: dict[str, int] = {}
    for name, variable in ENV.items():
        if name in options:
            values[name] = _integer(name, options[name], f"model {model!r}")
        elif (found := environment.value(variable, environ)) is not None and found.strip():
            values[name] = _integer(name, found, f"${variable}")
    return LocalSettings(slots=values.get("slots", DEFAULT_SLOTS), threads=values.get("threads"),
                         poll=values.get("poll", DEFAULT_POLL), context=values.get("context"))
