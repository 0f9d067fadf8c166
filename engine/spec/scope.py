"""What an expression may read at one place of a spec: names, and the keys known for some.

A `Scope` maps each name in scope to the keys it is known to have (``run`` its fields,
``options`` the declared options, a prompt stage and ``answer`` the properties its output
schema declares) or to None when its shape is not known at load (vars, `let` names, rule
results, mapped results). The compiler checks every name and every ``name.key`` an expression
or template reads against the scope of its place, so a misspelling is a load-time error with
a did-you-mean, not a failure on every item after a paid judge call.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from ..core.errors import did_you_mean


@dataclass(frozen=True, slots=True)
class NameProblem:
    """A name or ``name.key`` read that its place does not provide; `line` is the first line
    of the read within the expression or template (1 for one-line expressions)."""

    what: str  # ``'supported'`` or ``'rate.ratng'``
    hint: str
    line: int


class Scope:
    """Names in scope, each with its known keys (a frozenset) or None (shape unknown)."""

    __slots__ = ("_keys",)

    def __init__(self, keys: Mapping[str, frozenset[str] | None]):
        self._keys = dict(keys)

    def __contains__(self, name: object) -> bool:
        return name in self._keys

    def __iter__(self) -> Iterator[str]:
        return iter(self._keys)

    def with_names(self, **more: frozenset[str] | None) -> "Scope":
        """This scope with more names (a name given again takes the new shape)."""
        return Scope({**self._keys, **more})

    def keys_of(self, name: str) -> frozenset[str] | None:
        """The keys known for `name` (None: unknown, or not in scope)."""
        return self._keys.get(name)

    def problems(self, compiled: Any) -> list[NameProblem]:
        """What `compiled` (an `Expression` or `Template`: `names`, `attrs`, `lines`) reads
        that this scope does not provide, sorted by name."""
        found = [NameProblem(f"{name!r}", did_you_mean(name, self._keys), compiled.lines.get(name, 1))
                 for name in sorted(compiled.names - self._keys.keys())]
        for base, key in sorted(compiled.attrs):
            known = self._keys.get(base)
            if base in compiled.names and known is not None and key not in known:
                hint = did_you_mean(key, known)
                if hint.startswith("did you mean"):
                    hint = hint.replace("'", f"'{base}.", 1)
                found.append(NameProblem(f"'{base}.{key}'", hint, compiled.lines.get((base, key), 1)))
        return found


__all__ = ["NameProblem", "Scope"]
