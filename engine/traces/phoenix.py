"""A running Phoenix server, both ways, through Phoenix's Python client (``scorespec[phoenix]``):
its spans read as traces (``phoenix://HOST:PORT[/PROJECT]``, project ``default`` unless given),
and evaluations (`engine.traces.evaluations`) logged back as span annotations (name, score,
label, explanation; annotator kind LLM), so they show beside the spans in Phoenix's UI.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import Any
from urllib.parse import urlsplit

from ..core.errors import UserError
from .evaluations import Evaluation
from .otlp_json import Span, span_of

DEFAULT_PROJECT = "default"
MAX_SPANS = 10_000_000  # spans read from one project, at most
MAX_TRACES = 10_000_000  # traces read from one project, at most
TRACES_PER_READ = 50  # traces whose spans one request reads
BATCH = 100  # annotations per request


class PhoenixError(UserError, ConnectionError):
    """Phoenix could not be reached or read, or its client is not installed."""


def parse_url(url: str) -> tuple[str, str]:
    """``phoenix://HOST:PORT[/PROJECT]`` (or an ``http(s)://`` URL for annotations) → (the
    server's base URL, the project). Raises `PhoenixError` for a URL without a host."""
    parts = urlsplit(url)
    if not parts.hostname:
        raise PhoenixError(f"{url}: expected phoenix://HOST:PORT[/PROJECT]")
    scheme = "http" if parts.scheme.lower() in ("phoenix", "http") else "https"
    project = parts.path.strip("/") or DEFAULT_PROJECT
    return f"{scheme}://{parts.netloc}", project


def client(base_url: str) -> Any:
    """Phoenix's client for `base_url` (``PHOENIX_API_KEY`` is read by the client)."""
    try:
        from phoenix.client import Client
    except ImportError:
        raise PhoenixError("reading or annotating Phoenix needs its client: pip install 'scorespec[phoenix]'") \
            from None
    return Client(base_url=base_url)


def read_traces(url: str) -> Iterator[tuple[int, list[Span]]]:
    """``(position, spans)`` for every trace of the project `url` names (1-based positions, the
    traces in the order the server lists them), streamed: the trace ids are read first, then the
    spans of `TRACES_PER_READ` traces per request, so at most that many traces are held at once.
    A server too old to list traces or filter spans by trace (Phoenix before 13.15) has the
    project's spans read in one request and grouped by trace. Raises `PhoenixError` when the server
    cannot be read."""
    base_url, project = parse_url(url)
    phoenix = client(base_url)
    try:
        ids = [trace["trace_id"] for trace in _read(url, project, lambda: phoenix.traces.get_traces(
            project_identifier=project, limit=MAX_TRACES, timeout=60))]
    except _TooOld:
        yield from enumerate(_grouped(span_of(dict(record)) for record in _read(
            url, project, lambda: phoenix.spans.get_spans(project_identifier=project, limit=MAX_SPANS,
                                                          timeout=60))), start=1)
        return
    position = 0
    for start in range(0, len(ids), TRACES_PER_READ):
        batch = ids[start:start + TRACES_PER_READ]
        records = _read(url, project, lambda: phoenix.spans.get_spans(
            project_identifier=project, trace_ids=batch, limit=MAX_SPANS, timeout=60))
        by_trace = {trace_id: [] for trace_id in batch}
        for span in (span_of(dict(record)) for record in records):
            by_trace.setdefault(span.trace_id, []).append(span)
        for spans in by_trace.values():
            if spans:
                position += 1
                yield position, spans


class _TooOld(Exception):
    """The server predates a route or parameter the streamed read uses."""


def _read(url: str, project: str, request: Callable[[], Any]) -> Any:
    """What `request` (a call of Phoenix's client) returns; `_TooOld` when the client says the
    server is too old for it, `PhoenixError` for anything else that fails."""
    from phoenix.client.exceptions import PhoenixException

    try:
        return request()
    except PhoenixException as exc:
        if "requires Phoenix >=" in str(exc):  # the client's words for a server older than a route
            raise _TooOld() from None
        raise PhoenixError(f"{url}: cannot read the spans of project {project!r} ({exc})") from None
    except Exception as exc:  # httpx's errors: refused, 404 for an unknown project
        raise PhoenixError(f"{url}: cannot read the spans of project {project!r} ({exc})") from None


def _grouped(spans: Iterable[Span]) -> list[list[Span]]:
    """`spans` grouped by trace, the traces in the order their first span came."""
    by_trace: dict[str, list[Span]] = {}
    for span in spans:
        by_trace.setdefault(span.trace_id, []).append(span)
    return list(by_trace.values())


def annotate(evaluations: Iterable[Evaluation], url: str) -> int:
    """Log each evaluation as an annotation of its span on the Phoenix server at `url` (``http://
    HOST:PORT``, or a ``phoenix://`` URL). Returns how many were logged; raises `PhoenixError`
    when the server refuses them."""
    base_url, _ = parse_url(url)
    spans = client(base_url).spans
    count = 0
    batch: list[dict[str, Any]] = []

    def flush() -> None:
        nonlocal batch
        if batch:
            try:
                spans.log_span_annotations(span_annotations=batch, sync=True)
            except Exception as exc:  # httpx's errors
                raise PhoenixError(f"{url}: the annotations were not accepted ({exc})") from None
            batch = []

    for evaluation in evaluations:
        result: dict[str, Any] = {}
        if evaluation.score is not None:
            result["score"] = evaluation.score
        label = evaluation.label or evaluation.error_type
        if label is not None:
            result["label"] = label
        if evaluation.explanation:
            result["explanation"] = evaluation.explanation
        batch.append({"name": evaluation.name, "annotator_kind": "LLM", "span_id": evaluation.span_id,
                      "result": result, "metadata": {"item_id": evaluation.item_id, "source": "scorespec"}})
        count += 1
        if len(batch) == BATCH:
            flush()
    flush()
    return count


__all__ = ["DEFAULT_PROJECT", "PhoenixError", "annotate", "client", "parse_url", "read_traces"]
