"""`load_scorer`: a spec loaded, its options gathered, and bound to its judge."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..interpret.scorer import OptionError, Scorer
from ..judge.call import Judge
from ..judge.settings import JudgeSettings
from ..spec.compile import load_spec
from ..spec.plans import ScorerPlan
from .stack import bind

#: The `JudgeSettings` fields `load_scorer` takes as keyword arguments (the others: ``settings=``).
SETTINGS_KEYWORDS = ("base_url", "api_key", "mode", "timeout_s", "context_window", "cache", "refresh", "jury",
                     "jury_min")


def load_scorer(name_or_path: str, model: str | None = None, *, options: Mapping[str, Any] | None = None,
                judge: Judge | None = None, settings: JudgeSettings | None = None, label: str | None = None,
                **keywords: Any) -> Scorer:
    """Load a spec and bind it to options and a judge (`engine.bind.stack.bind`).

    name_or_path: a spec id (``faithfulness``) or a YAML path. model: ``provider/model``,
    ``local``, ``local-tiny`` or ``llamacpp/PATH.gguf`` (precedence: this argument >
    ``settings.model`` > ``SCORESPEC_MODEL`` > the spec's judge model > ``local``). options: the
    spec's options by name, e.g. ``options={"context": ["Paris is in France."], "scale": 10}``;
    merged over the spec's defaults. judge: an explicit judge object (e.g.
    `engine.testing.FakeJudge`). settings: the judge's `engine.judge.settings.JudgeSettings`
    (all of them, e.g. a rate limit or a retry policy); these keyword arguments are its fields,
    given over it:

    - base_url/api_key: for an OpenAI-compatible server. mode: instructor's structured-output
      mode (``tools``, ``json_schema``, ``json``, …; default chosen per provider). timeout_s:
      per-call timeout in seconds (default 120).
    - context_window: the model's context in tokens, checked before each call so an item whose
      prompt cannot fit fails (kind ``prompt_too_long``) without a call; default
      ``$SCORESPEC_CONTEXT_WINDOW``, else known per model, else no check; 0 = no check (see
      `engine.judge.window`).
    - cache: keep the judge's validated answers and serve them again
      (`engine.judge.cache.layer.open_cache`): True for the default cache
      (``$SCORESPEC_CACHE_URL``, else the file ``$SCORESPEC_CACHE_DB``, else
      ``judge-cache.sqlite`` in ``$SCORESPEC_CACHE`` or ``~/.cache/scorespec``), a file path, a
      Redis URL (``redis://host:6379/0``), or a `engine.judge.cache.base.JudgeCache`; False (the
      default here; the CLI's default is on) for none. A judge given as `judge` is cached only
      when it has a provider identity (the judges `engine.bind.stack.make_judge` builds).
      refresh: with a cache, ask every call again and overwrite its entry.
    - jury, jury_min: a panel of two or more judge models asking every prompt stage (a tuple, or
      text with commas), replacing the spec's ``judge.jury``, and the fewest that must answer
      (`engine.spec.jury`).

    label: the scorer's name in a batch run (default: its id; see `Scorer`). Any other keyword
    argument is shorthand for an option (``scale=10`` is ``options={"scale": 10}``). An option
    named like one of this function's keywords (``model``, ``mode``, ``judge``, ``timeout_s``, …)
    can only be passed in ``options={...}``.

    Raises `OptionError` for an unknown option or a misspelled keyword (with the nearest name of
    either), an invalid option value, an option given both ways, or a keyword that is also one of
    the spec's options given without ``options=``; `TypeError` for `settings` that is not a
    `JudgeSettings`; `ValueError` for a bad label, timeout,
    context window or jury; `engine.judge.model.ModelError` for a judge model that cannot work here;
    `SpecError` for a broken spec; `FileNotFoundError` for an unknown id.
    """
    settings = JudgeSettings.of(settings)
    compiled = load_spec(name_or_path)
    given = {name: keywords.pop(name) for name in SETTINGS_KEYWORDS if name in keywords}
    merged = _gather_options(compiled, options, keywords,
                             {"model": model, "judge": judge, "settings": settings, "label": label,
                              **{name: value or None if name in ("cache", "refresh") else value
                                 for name, value in given.items()}})
    # a timeout of 0 or None is the default one
    settings = settings.replace(
        **{name: value for name, value in given.items() if value is not None and (value or name != "timeout_s")})
    if model is not None:
        settings = settings.replace(model=model)
    return bind(compiled, settings, judge=judge, options=merged, label=label)


def load_scorer_keywords() -> list[str]:
    """The names of `load_scorer`'s keywords (``name_or_path`` included; its named parameters
    and `SETTINGS_KEYWORDS`, in the order its docstring gives them): reserved, so an option of the
    same name goes in ``options={...}``."""
    return ["name_or_path", "model", "options", "judge", "base_url", "api_key", "mode", "timeout_s",
            "context_window", "label", "cache", "refresh", "jury", "jury_min", "settings"]


def _gather_options(compiled: ScorerPlan, options: Mapping[str, Any] | None, shorthand: Mapping[str, Any],
                    keywords_given: Mapping[str, Any]) -> dict[str, Any]:
    """`options` and the shorthand keywords as one mapping; raises `OptionError` (see `load_scorer`)."""
    if options is not None and not isinstance(options, Mapping):
        raise OptionError(f"{compiled.id}: options must be a mapping of option names to values, "
                          f"not {type(options).__name__}")
    known = compiled.options.validators
    if options is None:
        for name, value in keywords_given.items():
            if value is not None and name in known:
                raise OptionError(
                    f"{compiled.id}: {name!r} is both a keyword of load_scorer and an option of this scorer: pass "
                    f"the option as options={{{name!r}: ...}} (with options= given, {name}= is the keyword)")
    merged = dict(options or {})
    for name, value in shorthand.items():
        if name not in known:
            raise OptionError(f"{compiled.id}: {name!r} is neither an option of this scorer nor a keyword of "
                              f"load_scorer ({_nearest(name, known)})")
        if name in merged:
            raise OptionError(f"{compiled.id}: option {name!r} is given twice, in options={{...}} and as {name}=")
        merged[name] = value
    return merged


def _nearest(name: str, options: Mapping[str, Any]) -> str:
    """A did-you-mean over the spec's options and load_scorer's keywords, saying which it is."""
    import difflib

    keywords = [k for k in load_scorer_keywords() if k != "name_or_path"]
    candidates = {**{k: "keyword" for k in keywords}, **{o: "option" for o in options}}
    close = difflib.get_close_matches(name, list(candidates), n=1, cutoff=0.6)
    if close:
        return f"did you mean the {candidates[close[0]]} {close[0]!r}?"
    listed = f"options: {', '.join(sorted(options))}; " if options else "it has no options; "
    return listed + "keywords: " + ", ".join(keywords)


__all__ = ["SETTINGS_KEYWORDS", "load_scorer", "load_scorer_keywords"]
