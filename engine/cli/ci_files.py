"""The CI flags of the batch commands (``--junit FILE``, ``--summary-md FILE``, ``--item-cutoff
ID=VALUE``), shared by ``eval``, ``calibrate`` and ``compare``: their help texts, reading the
cut-offs and writing a `CIReport` where asked. Imported by the CLI at startup, so the report
modules are imported when they are used."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .app import fail

if TYPE_CHECKING:
    from ..report.ci import CIReport

JUNIT_HELP = ("Write a JUnit XML report: a test case per item and scorer (failed → error, not scorable → skipped, "
              "worse than --item-cutoff → failure) and one per threshold.")
SUMMARY_MD_HELP = ("Write a Markdown summary (table, thresholds, worst items); appended when FILE is "
                   "$GITHUB_STEP_SUMMARY.")
ITEM_CUTOFF_HELP = ("ID=VALUE: an item whose score is worse than VALUE (by the scorer's direction) is a failure in "
                    "the reports and exits 1 (repeatable; ID is a scorer's label or id, or ID.NAME for one of its "
                    "sub-scores). `spec` (or ID=spec): the cut-off each spec documents (its `cutoff` key, and each "
                    "sub-score's).")


def write_reports(report: CIReport, *, junit: str | os.PathLike[str] | None = None,
                  summary_md: str | os.PathLike[str] | None = None) -> list[str]:
    """Write the JUnit file and/or the Markdown summary; returns ``["junit PATH", "summary PATH"]``
    for what was written. Raises `OSError` when a file cannot be written."""
    from ..report.junit import write_junit
    from ..report.summary_md import write_summary_md

    written = []
    if junit is not None:
        written.append(f"junit {write_junit(report, junit)}")
    if summary_md is not None:
        written.append(f"summary {write_summary_md(report, Path(summary_md))}")
    return written


def cutoff_note(report: CIReport) -> str | None:
    """``3 item(s) worse than their item cut-off (exit 1)`` when any is, else None."""
    misses = report.cutoff_misses
    if not misses:
        return None
    return f"{misses} item(s) worse than their item cut-off" + (" (exit 1)" if report.exit_code == 1 else "")


def item_cutoffs_or_exit(pairs: list[str], scorers: list[Any]) -> dict[str, float]:
    """``--item-cutoff`` values by scorer label or id (each must name one of `scorers`, by
    ``label`` or ``id``); exits 2 with a message on a bad one."""
    from ..report.ci import check_item_cutoffs, parse_item_cutoffs
    from ..run.summary import sub_directions

    try:
        pairs = spec_cutoff_pairs(pairs, scorers)
        cutoffs = parse_item_cutoffs(pairs)
        check_item_cutoffs(cutoffs, [name for s in scorers for base in (s.label, s.id)
                                     for name in (base, *(f"{base}.{sub}" for sub in sub_directions(s)))])
    except ValueError as exc:
        fail(str(exc))
    return cutoffs


def spec_cutoff_pairs(pairs: list[str], scorers: list[Any]) -> list[str]:
    """`pairs` with ``spec`` (every scorer whose spec documents a cut-off) and ``ID=spec`` (that
    scorer's) replaced by ``LABEL=VALUE`` from the specs' ``cutoff`` keys. Raises `ValueError` for
    ``spec`` when no scorer documents one, or ``ID=spec`` for a scorer that does not."""
    out: list[str] = []
    for pair in pairs:
        name, sep, value = str(pair).partition("=")
        sub = _sub_cutoff(name.strip(), scorers) if sep and value.strip() == "spec" else None
        if sub is not None:
            out.append(f"{name.strip()}={sub!r}")
        elif not sep and name.strip() == "spec":
            found = [f"{s.label}={s.cutoff!r}" for s in scorers if getattr(s, "cutoff", None) is not None]
            found += [f"{s.label}.{n}={c!r}" for s in scorers for n, c in _sub_cutoffs(s).items() if c is not None]
            if not found:
                raise ValueError("--item-cutoff spec: none of the scorers documents a cut-off (a spec's `cutoff` key)")
            out.extend(found)
        elif sep and value.strip() == "spec":
            chosen = [s for s in scorers if name.strip() in (s.label, s.id)]
            if chosen and getattr(chosen[0], "cutoff", None) is None:
                raise ValueError(f"--item-cutoff {pair}: {chosen[0].id}'s spec documents no cut-off (its `cutoff` key)")
            out.extend(f"{s.label}={s.cutoff!r}" for s in chosen[:1]) if chosen else out.append(pair)
        else:
            out.append(pair)
    return out


def _sub_cutoffs(scorer: Any) -> dict[str, float | None]:
    """A scorer's sub-scores' documented cut-offs on its scale, by name (None: none documented)."""
    plan = getattr(scorer, "plan", None)
    names = [sub.name for sub in getattr(plan, "scores", ())]
    return {name: plan.sub_cutoff_at(name, getattr(scorer, "scale", None)) for name in names} if names else {}


def _sub_cutoff(name: str, scorers: list[Any]) -> float | None:
    """The documented cut-off of the sub-score ``ID.NAME`` (None: `name` names no sub-score). Raises
    `ValueError` for a sub-score that documents none."""
    base, dot, sub = name.rpartition(".")
    chosen = [s for s in scorers if dot and base in (s.label, s.id) and sub in _sub_cutoffs(s)]
    if not chosen:
        return None
    found = _sub_cutoffs(chosen[0])[sub]
    if found is None:
        raise ValueError(f"--item-cutoff {name}=spec: the sub-score {sub!r} of {chosen[0].id} documents no cut-off")
    return found


def write_reports_or_exit(report: CIReport, junit: str | os.PathLike[str] | None,
                          summary_md: str | os.PathLike[str] | None) -> None:
    """`write_reports`, then on stderr the cut-off misses and where the files went; exits 2
    when a file cannot be written."""
    from .output import err_console

    try:
        written = write_reports(report, junit=junit, summary_md=summary_md)
    except OSError as exc:
        fail(f"cannot write the report: {exc}")
    note = cutoff_note(report)
    lines = ([note] if note else []) + (["reports: " + " · ".join(written)] if written else [])
    for line in lines:
        err_console().print(line, markup=False, highlight=False, soft_wrap=True)


__all__ = ["write_reports", "cutoff_note", "item_cutoffs_or_exit", "spec_cutoff_pairs", "write_reports_or_exit", "JUNIT_HELP",
           "SUMMARY_MD_HELP", "ITEM_CUTOFF_HELP"]
