"""Loading the scorers a batch command names (``eval``, ``calibrate``, ``compare``): each ``SPEC`` or
``LABEL=SPEC``, with the judge model, server, cache and ``--option`` values the flags give; exits
with a message on bad input."""

from __future__ import annotations

from typing import Any, Optional

from .app import fail, parse_options

__all__ = ["_load_scorers"]


def _load_scorers(names: list[str], model: Optional[str], base_url: Optional[str], options: list[str],
                  cache: Any = None, refresh: bool = False, samples: Optional[int] = None) -> list[Any]:
    """Compiled `Scorer`s for `names`, each ``SPEC`` or ``LABEL=SPEC`` (`engine.run.evals.
    scorer_reference`: one spec may run twice under two labels); options are ``LABEL.key=value``,
    ``ID.key=value``, or ``key=value`` when one spec runs (`engine.cli.app.parse_options`);
    `samples` for every prompt stage that can be sampled (a note names the others). Exits with a
    message on bad input."""
    from ..bind.stack import bind
    from ..core.errors import SpecError
    from ..interpret.scorer import OptionError, check_label
    from ..judge.model import ModelError
    from ..judge.settings import JudgeSettings
    from ..run.evals import check_labels, scorer_reference
    from ..spec.compile import load_spec

    compiled_list, labels = [], []
    for name in names:
        try:
            label, spec = scorer_reference(name)
            compiled = load_spec(spec)
            labels.append(compiled.id if label is None else check_label(label))
            compiled_list.append(compiled)
        except SpecError as exc:
            fail(f"{name}: the spec has problems:\n" + exc.render())
        except (FileNotFoundError, ValueError) as exc:
            fail(str(exc))
    try:
        check_labels(labels)
    except ValueError as exc:
        fail(str(exc))
    by_label = parse_options(options, compiled_list, labels)
    settings = JudgeSettings(model=model, base_url=base_url, cache=cache, refresh=refresh)
    scorers = []
    for compiled, label in zip(compiled_list, labels):
        try:
            scorers.append(bind(compiled, settings, options=by_label[label], label=label, samples=samples))
        except (OptionError, ModelError) as exc:
            fail(str(exc))
        if samples is not None and samples > 1 and scorers[-1].unsampled:
            from .output import err_console

            stages = ", ".join(scorers[-1].unsampled)
            err_console().print(f"note: --samples {samples}: {compiled.id} asks stage(s) {stages} once (no enum, "
                                "boolean or number field in the answer to reduce; give the stage a reduce: "
                                "expression over samples to sample it)", markup=False, highlight=False,
                                soft_wrap=True, style="yellow")
    return scorers
