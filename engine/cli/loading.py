"""Loading the scorers a batch command names (``eval``, ``calibrate``, ``compare``, ``align``): each
``SPEC`` or ``LABEL=SPEC``, with the judge's settings (`engine.cli.flags.build_settings`) and the
``--option`` values the flags give; exits with a message on bad input."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Optional

from .app import fail, parse_options

if TYPE_CHECKING:
    from ..judge.settings import JudgeSettings

__all__ = ["load_scorers"]


def _check_credentials(scorer: Any) -> None:
    """Exit with one message, before any item, when `scorer`'s hosted judge has no API key (its
    client refuses to be built: `engine.judge.call.MissingCredentials`), instead of failing every
    item with kind ``auth``. An embedded judge is not built here (it loads a model)."""
    from ..judge.call import MissingCredentials
    from ..judge.model import is_local

    model = getattr(scorer, "model", None)
    if not getattr(getattr(scorer, "plan", None), "uses_judge", False) or not model or is_local(model):
        return
    try:
        scorer.judge
    except MissingCredentials as exc:
        provider = model.split("/", 1)[0]
        variable = {"anthropic": "ANTHROPIC_API_KEY"}.get(provider, "OPENAI_API_KEY")
        fail(f"the judge {model} has no API key ({exc}): set {variable}, or give --base-url for an "
             f"OpenAI-compatible server that needs none; no item was scored (check the judge with "
             f"`scorespec doctor --model {model}`)")
    except Exception:  # any other failure to build shows on each item, as before
        return


def _problems_text(failed: dict[str, list[Any]], count: int) -> str:
    """Why the scorers `failed` (name → its `Problem`s, or a message) of `count` cannot load, as
    `scorespec validate` prints it: a heading, each problem once (a shared parent's too) in file
    order, the messages, and ``N problem(s) in M of K spec(s)``."""
    found = [p for problems in failed.values() for p in problems if not isinstance(p, str)]
    problems = sorted(dict.fromkeys(found), key=lambda p: (p.file, p.line, p.column, p.key_path, p.code))
    messages = [p for problems in failed.values() for p in problems if isinstance(p, str)]
    if len(failed) == 1 and not problems:  # one spec not found, or a bad label: its message alone
        return "\n".join(messages)
    heading = (f"{next(iter(failed))}: the spec has problems:" if len(failed) == 1 and problems
               else f"{len(failed)} of {count} scorers have problems:")
    lines = [heading, *(p.render() for p in problems), *messages]
    return "\n".join([*lines, f"{len(problems) + len(messages)} problem(s) in {len(failed)} of {count} spec(s)"])


def load_scorers(names: list[str], judge: JudgeSettings, options: list[str],
                 samples: Optional[int] = None) -> list[Any]:
    """Compiled `Scorer`s for `names`, each ``SPEC`` or ``LABEL=SPEC`` (`engine.run.evals.
    scorer_reference`: one spec may run twice under two labels), bound to the judge `judge`
    describes; options are ``LABEL.key=value``,
    ``ID.key=value``, or ``key=value`` when one spec runs (`engine.cli.app.parse_options`);
    `samples` for every prompt stage that can be sampled (a note names the others). Exits with a
    message on bad input."""
    from ..bind.stack import bind
    from ..core.errors import SpecError
    from ..interpret.scorer import check_label
    from ..run.evals import check_labels, scorer_reference
    from ..spec.compile import load_spec

    compiled_list, labels = [], []
    failed: dict[str, list[Any]] = {}  # every spec's problems, reported together
    for name in names:
        try:
            label, spec = scorer_reference(name)
            compiled = load_spec(spec)
            labels.append(compiled.id if label is None else check_label(label))
            compiled_list.append(compiled)
        except SpecError as exc:
            failed[name] = list(exc.problems)
        except (FileNotFoundError, ValueError) as exc:
            failed[name] = [str(exc)]
    if failed:
        fail(_problems_text(failed, len(names)))
    try:
        check_labels(labels)
    except ValueError as exc:
        fail(str(exc))
    by_label = parse_options(options, compiled_list, labels)
    scorers = []
    for compiled, label in zip(compiled_list, labels):
        scorers.append(bind(compiled, judge, options=by_label[label], label=label, samples=samples))
        _check_credentials(scorers[-1])
        if samples is not None and samples > 1 and scorers[-1].unsampled:
            from .output import err_console

            stages = ", ".join(scorers[-1].unsampled)
            err_console().print(f"note: --samples {samples}: {compiled.id} asks stage(s) {stages} once (no enum, "
                                "boolean or number field in the answer to reduce; give the stage a reduce: "
                                "expression over samples to sample it)", markup=False, highlight=False,
                                soft_wrap=True, style="yellow")
    return scorers
