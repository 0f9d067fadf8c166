"""``scorespec doctor [--model M] [--base-url URL] [--json]``: what a judge's server can do.

The model is ``--model``, else ``$SCORESPEC_MODEL`` (as for every command).

Probes a hosted judge with a handful of tiny requests (`engine.judge.probe`) and prints a table
(or, with ``--json``, one JSON object): reachable, key accepted, each structured-output mode that
works, logprobs, the parameters refused, reasoning tokens reported, the context window the server
states, then the request family, mode and settings scorespec will use and why. ``--model local``
(or ``local-tiny``, ``llamacpp/PATH.gguf``) reports the embedded judge instead: its file, its
context window, whether llama.cpp is installed. Exit 0 when a scorer can run against the judge as
configured (the mode: ``--mode``, else ``$SCORESPEC_MODE``, else tools), 1 when it cannot (with
the one-line reason, which names a mode that works if one does), 2 for a usage error.
"""

from __future__ import annotations

import json
from typing import Any, Optional

import typer

from .app import EXIT_OK, app, fail
from .app import stdout_console as _stdout
from .options import BaseUrl

__all__ = ["doctor_cmd", "local_findings"]

EXIT_CANNOT_RUN = 1


@app.command("doctor")
def doctor_cmd(model: Optional[str] = typer.Option(None, "--model", help="The judge to check: provider/model (e.g. "
                                                   "openai/gpt-5-mini), or local (default: $SCORESPEC_MODEL)."),
               base_url: BaseUrl = None,
               mode: Optional[str] = typer.Option(None, "--mode", help="The structured-output mode to check "
                                                  "(default: $SCORESPEC_MODE, else tools)."),
               as_json: bool = typer.Option(False, "--json", help="Print the findings as one JSON object."),
               timeout_s: float = typer.Option(20.0, "--timeout", min=0.1, help="Seconds per probe request.")) -> None:
    """Check what a judge model's server can do before a run: a handful of tiny requests (a few
    tokens each), then the mode and settings scorespec will use. Exit 0 when a scorer can run as
    configured, 1 when it cannot (the reason, and a mode that works, on the last line)."""
    from ..core import environment
    from ..judge.model import ModelError, check_model, is_local

    model = model or environment.value("SCORESPEC_MODEL")
    if not model:
        fail("give the judge to check: --model provider/model (or local), or set $SCORESPEC_MODEL")
    if is_local(model):  # its file, options and binding are findings, not usage errors
        found = local_findings(model)
    else:
        try:
            check_model(model)
        except ModelError as exc:
            fail(str(exc))
        from ..judge.probe import probe

        provider = model.split("/", 1)[0]
        if provider not in ("openai", "ollama") and not base_url:
            fail(f"doctor probes OpenAI-compatible servers (openai/…, ollama/…, or any model with --base-url); "
                 f"{provider}/… is not one")
        found = probe(model, base_url=base_url, mode=mode or environment.value("SCORESPEC_MODE"),
                      timeout_s=timeout_s).to_json_dict()
    if as_json:
        typer.echo(json.dumps(found, indent=2, ensure_ascii=False))
    else:
        _print(found)
    raise typer.Exit(EXIT_OK if found["ok"] else EXIT_CANNOT_RUN)


def local_findings(model: str) -> dict[str, Any]:
    """The embedded judge's findings (the shape of `engine.judge.probe.Findings.to_json_dict`):
    its GGUF file and context window, without loading it; a problem when the file or the
    llama.cpp binding is missing."""
    from ..core.errors import LocalJudgeError

    found: dict[str, Any] = {"model": model, "base_url": None, "embedded": True, "reachable": True,
                             "key_accepted": None, "modes": {"grammar": True}, "logprobs": True, "refused": {},
                             "reasoning_tokens": None, "context_window": None, "family": "chat", "mode": "grammar",
                             "why": "the embedded judge writes JSON under a grammar built from each stage's schema",
                             "problem": None, "errors": {}}
    try:
        from ..embedded.llama import check_binding, model_plan

        path, _settings, window = model_plan(model)
        found["file"], found["context_window"] = str(path), window
        check_binding()
    except (LocalJudgeError, ImportError, OSError) as exc:
        found["problem"] = str(exc)
    found["ok"] = found["problem"] is None
    return found


def _print(found: dict[str, Any]) -> None:
    from rich.markup import escape
    from rich.table import Table

    def yes(value: Any) -> str:
        return "—" if value is None else ("yes" if value else "no")

    table = Table(title=f"judge {escape(found['model'])}" + (f" at {escape(found['base_url'])}"
                                                               if found.get("base_url") else ""))
    table.add_column("check")
    table.add_column("found")
    if found.get("embedded"):
        table.add_row("embedded model file", escape(str(found.get("file") or "—")))
    else:
        table.add_row("reachable", yes(found["reachable"]))
        table.add_row("key accepted", yes(found["key_accepted"]))
    for mode, works in found["modes"].items():
        table.add_row(f"mode {mode}", "works" if works else "fails")
    table.add_row("logprobs", yes(found["logprobs"]))
    for param, refused in found["refused"].items():
        table.add_row(f"parameter {param}", "refused" if refused else "accepted")
    table.add_row("reasoning tokens reported", "—" if found["reasoning_tokens"] is None else str(found["reasoning_tokens"]))
    table.add_row("context window", "not stated" if found["context_window"] is None else f"{found['context_window']:,}")
    console = _stdout()
    console.print(table)
    console.print(f"request family: {found['family']}" + (f" · mode: {found['mode']}" if found["mode"] else "")
                  + (f" ({escape(found['why'])})" if found["why"] else ""), markup=False)
    for what, said in found.get("errors", {}).items():
        if said and said in (found["problem"] or ""):
            continue  # the last line says it
        console.print(f"  {what}: {said}", markup=False, highlight=False, soft_wrap=True)
    if found["problem"]:
        console.print(f"cannot run: {found['problem']}", markup=False, soft_wrap=True)
    else:
        console.print("ok: a scorer can run against this judge", markup=False)

