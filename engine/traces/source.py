"""`TraceSource`: traces to read as a run's items — an OTLP JSON file (or a JSONL of spans), or a
running Phoenix server (``phoenix://HOST:PORT[/PROJECT]``) — with how they become items.

`engine.run.datasets.iter_items` reads one (a path or ``phoenix://`` URL given as data with
``format="otlp"`` or detected as spans becomes one with the default options).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from .assemble import TraceOptions, assemble, assemble_documents
from .otlp_json import OnSpanProblem

PHOENIX_SCHEME = "phoenix://"


def is_phoenix(location: Any) -> bool:
    """Whether `location` is a ``phoenix://`` URL."""
    return isinstance(location, str) and location.lower().startswith(PHOENIX_SCHEME)


@dataclass(frozen=True)
class TraceSource:
    """Traces to score: `location` (a file path, or ``phoenix://HOST:PORT[/PROJECT]``) and the
    `options` (`TraceOptions`: one item per trace, or per span of some kinds)."""

    location: str
    options: TraceOptions = field(default_factory=TraceOptions)

    def __str__(self) -> str:
        return self.location

    def records(self, fields: Mapping[str, str], on_problem: OnSpanProblem) -> Iterator[tuple[int, dict[str, Any]]]:
        """``(line, record)`` per item (`engine.traces.assemble`); a file is streamed. Raises
        `OSError` for a file that cannot be opened, `engine.traces.phoenix.PhoenixError` for a
        Phoenix server that cannot be read."""
        if is_phoenix(self.location):
            from .phoenix import read_traces

            # a whole trace a document: each trace closes as it is read
            return assemble_documents(read_traces(self.location), self.options, fields, on_problem)
        return _file_records(self.location, self.options, fields, on_problem)


def _file_records(path: str, options: TraceOptions, fields: Mapping[str, str],
                  on_problem: OnSpanProblem) -> Iterator[tuple[int, dict[str, Any]]]:
    from pathlib import Path

    from .otlp_json import read_documents

    with open(path, "rb") as f:
        yield from assemble_documents(read_documents(f, on_problem, whole=lambda: Path(path).read_bytes()), options,
                                      fields, on_problem)


__all__ = ["PHOENIX_SCHEME", "TraceSource", "is_phoenix"]
