"""`Secret`: an API key held so that no generic view of the settings shows it.

A frozen dataclass's ``repr`` can leave a field out, but `dataclasses.asdict`, ``vars`` and
logging of the fields still show its value. `JudgeSettings.api_key` therefore holds a `Secret`:
its ``repr`` and ``str`` are ``'********'``, `copy.deepcopy` (what `asdict` does to a field value)
returns the same object, it is not JSON-serialisable (``json.dumps`` raises rather than write
the key) and it pickles to nothing (`__reduce__` refuses). Only `reveal` gives the key, at the
one place that hands it to a provider client (`engine.bind.stack`).
"""

from __future__ import annotations

from typing import Any

__all__ = ["Secret", "reveal"]

MASK = "********"


class Secret:
    """A secret string. Equal to another `Secret` of the same text; hashable."""

    __slots__ = ("_value",)

    def __init__(self, value: str):
        if not isinstance(value, str):
            raise TypeError(f"a secret is a str, not {type(value).__name__}")
        self._value = value

    def reveal(self) -> str:
        return self._value

    def __repr__(self) -> str:
        return repr(MASK)

    __str__ = __repr__

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Secret) and other._value == self._value

    def __hash__(self) -> int:
        return hash((Secret, self._value))

    def __deepcopy__(self, memo: dict[int, Any]) -> Secret:
        return self

    def __copy__(self) -> Secret:
        return self

    def __reduce__(self) -> Any:
        raise TypeError("a Secret is not pickled: the process that needs the key reads its own environment")


def reveal(value: Secret | str | None) -> str | None:
    """The text of `value` (a `Secret`, a plain str, or None)."""
    return value.reveal() if isinstance(value, Secret) else value
