"""A `CIReport` as JUnit XML, the test report GitLab, Jenkins and GitHub's reporters read.

Shape (one ``testsuite`` per scorer label, one ``testcase`` per item; then a ``checks`` suite
with one ``testcase`` per gate — each threshold, the dataset, compare's verdict)::

    <testsuites name="scorespec eval" tests failures errors skipped time>
      <testsuite name="faithfulness" tests failures errors skipped time>
        <properties><property name="runId" value="…"/><property name="scorer" value="faithfulness"/></properties>
        <testcase classname="faithfulness" name="item 7" time="1.204">
          <error type="transport" message="stage preprocess (transport): …">…</error>      a failed item
          <skipped message="not scorable: …"/>                                          a not scorable item
          <failure type="item_cutoff" message="score 0.3 is worse than the cut-off 0.5">…</failure>
          <system-out>score 0.9: the reason</system-out>                                 a passed item
        </testcase>
      </testsuite>
      <testsuite name="checks">…</testsuite>
    </testsuites>

User text (item ids, reasons, judge messages) is escaped by `xml.etree`; characters XML 1.0
cannot hold (NUL, ESC and the other C0 controls but tab and newlines, lone surrogates, U+FFFE,
U+FFFF) are written as visible ``\\xNN`` / ``\\uNNNN`` text.
"""

from __future__ import annotations

import os
import re
import xml.etree.ElementTree as ET
from collections.abc import Iterable
from pathlib import Path

from ..run.pairwise_stats import pairwise_text
from .ci import CIReport, Gate, ItemOutcome, corrected_text

MESSAGE_CHARS = 500  # a message attribute's length; the element's text holds the rest
_NOT_XML = re.compile("[^\t\n\r\u0020-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def xml_safe(text: object) -> str:
    """`text` as a string XML 1.0 can hold: each character it cannot, written ``\\xNN`` or ``\\uNNNN``."""
    def visible(match: re.Match[str]) -> str:
        code = ord(match.group())
        return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"

    return _NOT_XML.sub(visible, str(text))


def _short(text: str) -> str:
    one_line = " ".join(text.split())
    return one_line if len(one_line) <= MESSAGE_CHARS else one_line[:MESSAGE_CHARS - 1] + "…"


def _fmt(value: float | None) -> str:
    return "—" if value is None else f"{value:.4f}".rstrip("0").rstrip(".")


def _sub(parent: ET.Element, tag: str, text: str | None = None, **attrs: str) -> ET.Element:
    element = ET.SubElement(parent, tag, {k: xml_safe(v) for k, v in attrs.items()})
    if text:
        element.text = xml_safe(text)
    return element


def _item_case(suite: ET.Element, o: ItemOutcome) -> None:
    case = _sub(suite, "testcase", classname=o.label, name=f"item {o.item_id}", time=f"{max(o.seconds, 0.0):.3f}")
    kind = o.kind
    if kind == "error":
        where = f" at stage {o.error_stage}" if o.error_stage else ""
        message = o.error_message or ""
        detail = f"stage: {o.error_stage or '—'}\nkind: {o.error_kind}\nmessage: {message}"
        _sub(case, "error", detail, type=str(o.error_kind or "error"),
             message=_short(f"{o.error_kind}{where}: {message}"))
    elif kind == "skipped":
        _sub(case, "skipped", message=_short(f"not scorable: {o.not_scorable_reason or o.reason or ''}"))
    elif kind == "failure":
        message = f"score {_fmt(o.score)} is worse than the cut-off {_fmt(o.cutoff)} ({o.direction.replace('_', ' ')})"
        _sub(case, "failure", f"{message}\nreason: {o.reason or '—'}", type="item_cutoff", message=_short(message))
    else:
        _sub(case, "system-out", f"score {_fmt(o.score)}" + (f": {o.reason}" if o.reason else ""))


def _gate_case(suite: ET.Element, gate: Gate) -> None:
    case = _sub(suite, "testcase", classname="checks", name=gate.name, time="0.000")
    text = gate.message + (f"\n{gate.detail}" if gate.detail else "")
    if gate.kind == "error":
        _sub(case, "error", text, type="error", message=_short(gate.message))
    elif gate.kind == "failure":
        _sub(case, "failure", text, type=gate.name.split()[0], message=_short(gate.message))
    else:
        _sub(case, "system-out", text)


def _counts(kinds: Iterable[str]) -> dict[str, str]:
    kinds = list(kinds)
    return {"tests": str(len(kinds)), "failures": str(kinds.count("failure")), "errors": str(kinds.count("error")),
            "skipped": str(kinds.count("skipped"))}


def _pairwise_properties(properties: ET.Element, figures: dict) -> None:
    """A pairwise scorer's figures (`engine.run.pairwise_stats`) as the suite's properties: the
    line, then each figure on its own (``winRate``, ``winRateCiLow``/``High``, ``signTestP``,
    ``positionConsistency``, ``longerWonShare``; an unknown one left out)."""
    _sub(properties, "property", name="pairwise", value=pairwise_text(figures))
    values = {"wins": figures["wins"], "ties": figures["ties"], "losses": figures["losses"],
              "winRate": figures["winRate"], "winRateCiLow": figures["winRateCi"]["low"],
              "winRateCiHigh": figures["winRateCi"]["high"], "signTestP": figures["signTestP"],
              "positionConsistency": figures["positionConsistency"],
              "longerWonShare": figures["lengthBias"]["share"]}
    for name, value in values.items():
        if value is not None:
            _sub(properties, "property", name=name, value=f"{value:.6g}" if isinstance(value, float) else str(value))


def junit_xml(report: CIReport) -> bytes:
    """The report as a UTF-8 JUnit XML document (with its declaration)."""
    by_label: dict[str, list[ItemOutcome]] = {label: [] for label in report.summaries}
    for outcome in report.outcomes:
        by_label.setdefault(outcome.label, []).append(outcome)
    root = ET.Element("testsuites", {"name": f"scorespec {report.command}"})
    for label, outcomes in by_label.items():
        seconds = sum(o.seconds for o in outcomes)
        suite = _sub(root, "testsuite", name=label, **_counts(o.kind for o in outcomes), time=f"{seconds:.3f}")
        properties = _sub(suite, "properties")
        scorer = outcomes[0].scorer if outcomes else report.summaries[label].scorer
        for name, value in (("runId", report.run_id), ("scorer", scorer)):
            if value:
                _sub(properties, "property", name=name, value=value)
        summary = report.summaries.get(label)
        corrected = summary.corrected_pass_rate if summary is not None else None
        if corrected is not None:
            _sub(properties, "property", name="correctedPassRate", value=corrected_text(corrected))
        figures = summary.pairwise if summary is not None else None
        if figures is not None:
            _pairwise_properties(properties, figures)
        for outcome in outcomes:
            _item_case(suite, outcome)
    if report.gates:
        suite = _sub(root, "testsuite", name="checks", **_counts(g.kind for g in report.gates), time="0.000")
        for gate in report.gates:
            _gate_case(suite, gate)
    kinds = [o.kind for o in report.outcomes] + [g.kind for g in report.gates]
    root.attrib.update({**_counts(kinds), "time": f"{max(report.seconds, 0.0):.3f}"})
    ET.indent(root)
    return ET.tostring(root, encoding="UTF-8", xml_declaration=True) + b"\n"


def write_junit(report: CIReport, path: str | os.PathLike[str]) -> Path:
    """Write `junit_xml(report)` to `path` (replacing it; its folder is created). Returns the
    path; raises `OSError` when it cannot be written."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_name(target.name + ".partial")
    partial.write_bytes(junit_xml(report))
    os.replace(partial, target)
    return target


__all__ = ["junit_xml", "write_junit", "xml_safe"]
