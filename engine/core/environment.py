"""The environment variables scorespec reads, declared once, and the one place that reads them.

Every ``SCORESPEC_*`` variable and every provider variable the engine reads is a `Variable` in
`VARIABLES`: its name, what it means, its default and where it applies. `value` is the only
function in ``engine`` that reads them (a test keeps it so), and the settings objects take
their environment from it when they are resolved (`engine.judge.settings.JudgeSettings.resolved`,
`engine.embedded.settings.local_settings`, the default paths). The docs' reference page of
environment variables is generated from `VARIABLES`.

A variable set to the empty string counts as not set. Values are read when a setting is
resolved, never cached, so a variable changed between two runs of one process is seen.

Providers reached through ``instructor.from_provider`` (``google/…``, ``groq/…``, …) read their
own variables inside their clients; scorespec reads none of them but ``*_API_KEY`` values, which
it keeps out of messages and logs (`api_key_values`).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass

__all__ = ["Variable", "VARIABLES", "TEST_VARIABLES", "value", "api_key_values", "variable", "KEY_VARIABLES",
           "ENDPOINT_VARIABLES"]


@dataclass(frozen=True)
class Variable:
    """One environment variable: `name`; `meaning`, a sentence; `default`, what holds when it is
    not set (prose); `applies`, where it is read (the commands or settings it changes); `group`:
    ``judge``, ``embedded``, ``files``, ``provider`` or ``tests``."""

    name: str
    meaning: str
    default: str
    applies: str
    group: str


VARIABLES: tuple[Variable, ...] = (
    Variable("SCORESPEC_MODEL", "The judge model for every scorer whose caller gives none (it stands for "
             "`--model` / `model=`, so it wins over a spec's `judge.model`).",
             "the spec's `judge.model`, else `local`", "every judging command, `scorespec doctor`, `load_scorer`", "judge"),
    Variable("SCORESPEC_MODE", "instructor's structured-output mode for hosted judges (`tools`, `json_schema`, "
             "`json`, `md_json`…).", "per provider (`tools`)", "hosted judges, unless `mode=` is given", "judge"),
    Variable("SCORESPEC_MODEL_FAMILY", "What a hosted model the table does not know accepts in a request: `chat`, "
             "`reasoning` (OpenAI's reasoning rules) or `thinking` (Anthropic's extended thinking).",
             "from the model's name, else `chat`", "hosted judges, unless the spec's `judge.family` or "
             "`family=` is given", "judge"),
    Variable("SCORESPEC_JURY", "A panel of judge models, comma-separated (`openai/gpt-4o-mini,anthropic/claude-"
             "3-5-haiku-latest,openai/gpt-4.1-nano`): every prompt stage of a spec without a jury is asked by each "
             "(it stands for `--jury`, below a spec's `judge.jury`).", "none: one judge",
             "every judging command, unless `--jury` / `jury=` is given or the spec names a jury", "judge"),
    Variable("SCORESPEC_JURY_MIN", "With `SCORESPEC_JURY`: the fewest jurors that must answer an item.",
             "more than half of the jurors", "the jury of `SCORESPEC_JURY`, unless `--jury-min` is given", "judge"),
    Variable("SCORESPEC_CONTEXT_WINDOW", "The judge model's context window in tokens, checked before each call; "
             "0 turns the check off.", "known per model, else no check",
             "every judge, unless `context_window=` is given", "judge"),
    Variable("SCORESPEC_CACHE_URL", "A Redis URL (`redis://host:6379/0?ttl=30d`): the shared judge-call cache.",
             "none: the SQLite file of `SCORESPEC_CACHE_DB`", "`cache=True` and the CLI's default cache", "judge"),
    Variable("SCORESPEC_CACHE_DB", "The SQLite file of the judge-call cache.",
             "`judge-cache.sqlite` in the cache folder", "`cache=True` and the CLI's default cache, "
             "`scorespec cache`", "files"),
    Variable("SCORESPEC_CACHE", "The folder scorespec keeps files in between runs (joined embedded model files, "
             "the judge-call cache, the user's price table).",
             "`$XDG_CACHE_HOME/scorespec`, else `~/.cache/scorespec`", "everything that keeps files", "files"),
    Variable("SCORESPEC_STORE", "The SQLite store of runs and results.", "`.scorespec/store.sqlite` under the "
             "current folder", "batch runs, `runs`, `show`, `report`, `calibrations`", "files"),
    Variable("SCORESPEC_PRICES", "The user's price table (YAML), laid over the shipped one; the file must exist.",
             "`prices.yaml` in the cache folder when there is one", "costs and `--max-cost`, unless `--prices` is "
             "given", "files"),
    Variable("SCORESPEC_LOCAL_SLOTS", "Sequences an embedded model decodes at once (1..16).", "1",
             "the embedded models, unless the model string says `?slots=`", "embedded"),
    Variable("SCORESPEC_LOCAL_THREADS", "CPU threads an embedded model uses (1..256).",
             "the CPUs no other embedded model of this user has taken", "the embedded models, unless `?threads=`",
             "embedded"),
    Variable("SCORESPEC_LOCAL_POLL", "How long llama.cpp's threads spin waiting for work (0..100).", "0",
             "the embedded models, unless `?poll=`", "embedded"),
    Variable("SCORESPEC_LOCAL_CONTEXT", "Each slot's context in tokens (256 or more).",
             "4096, or the model's trained context when smaller", "the embedded models, unless `?context=`",
             "embedded"),
    Variable("SCORESPEC_LOCAL_JOBS", "The folder where each live embedded model claims its CPU threads.",
             "a folder of this user's in the system's temporary folder", "the embedded models", "embedded"),
    Variable("OPENAI_API_KEY", "The API key of `openai/…` models.",
             "none (with a base URL: a placeholder key)", "`openai/…` judges, unless `api_key=` is given", "provider"),
    Variable("OPENAI_BASE_URL", "An OpenAI-compatible server for `openai/…` models.", "OpenAI's API",
             "`openai/…` judges, unless `--base-url` / `base_url=` is given", "provider"),
    Variable("ANTHROPIC_API_KEY", "The API key of `anthropic/…` models.", "none",
             "`anthropic/…` judges, unless `api_key=` is given", "provider"),
    Variable("ANTHROPIC_BASE_URL", "Another endpoint for `anthropic/…` models.", "Anthropic's API",
             "`anthropic/…` judges, unless `base_url=` is given", "provider"),
    Variable("OLLAMA_BASE_URL", "The Ollama server of `ollama/…` models.", "`http://localhost:11434/v1`",
             "`ollama/…` judges, unless `base_url=` is given", "provider"),
    Variable("XDG_CACHE_HOME", "The user's cache folder (the XDG base directory convention).", "`~/.cache`",
             "the cache folder, when `SCORESPEC_CACHE` is not set", "files"),
    Variable("GITHUB_STEP_SUMMARY", "The file GitHub Actions shows as a job's summary.", "none",
             "`--summary-md FILE`: when FILE is this file, the Markdown summary is appended to it", "files"),
)

#: Variables only the test suite reads (never the engine), listed so every ``SCORESPEC_*`` name
#: has its line.
TEST_VARIABLES: tuple[Variable, ...] = (
    Variable("SCORESPEC_REQUIRE_LOCAL", "1: a test that needs the embedded models fails instead of being skipped "
             "when they are missing.", "skipped", "the test suite", "tests"),
    Variable("SCORESPEC_REQUIRE_RAY", "1: the Ray tests fail instead of being skipped without Ray.", "skipped",
             "the test suite", "tests"),
    Variable("SCORESPEC_REQUIRE_REDIS", "1: the Redis tests fail instead of being skipped without `redis-server`.",
             "skipped", "the test suite", "tests"),
    Variable("SCORESPEC_REQUIRE_PHOENIX", "1: the Phoenix tests fail instead of being skipped without Phoenix.",
             "skipped", "the test suite", "tests"),
    Variable("SCORESPEC_UPDATE_SNAPSHOTS", "1: snapshot tests write the snapshots they compare against.",
             "compared", "the test suite", "tests"),
    Variable("SCORESPEC_BENCH_REFERENCE_DIR", "A checkout of the reference implementation the benchmarks compare "
             "with.", "none: those benchmarks are skipped", "`tests/bench/`", "tests"),
)

_BY_NAME = {v.name: v for v in VARIABLES}

#: The variable holding each provider's API key (a provider not listed reads its own, if any).
KEY_VARIABLES = {"openai": "OPENAI_API_KEY", "anthropic": "ANTHROPIC_API_KEY"}
#: The variable each provider's endpoint is read from when none is given.
ENDPOINT_VARIABLES = {"openai": "OPENAI_BASE_URL", "ollama": "OLLAMA_BASE_URL", "anthropic": "ANTHROPIC_BASE_URL"}


def variable(name: str) -> Variable:
    """The declared `Variable` called `name`. Raises `KeyError` for a name not in `VARIABLES`."""
    try:
        return _BY_NAME[name]
    except KeyError:
        raise KeyError(f"{name} is not a variable scorespec reads (engine.core.environment.VARIABLES)") from None


def value(name: str, environ: Mapping[str, str] | None = None) -> str | None:
    """The value of the declared variable `name` in `environ` (default: this process's
    environment), None when it is not set or empty. Raises `KeyError` for a name not declared in
    `VARIABLES`, so every variable read has its line in the reference."""
    variable(name)
    found = (os.environ if environ is None else environ).get(name)
    return found if found else None


def api_key_values(environ: Mapping[str, str] | None = None) -> tuple[str, ...]:
    """The values of every ``*_API_KEY`` variable that is set (any case): keys of providers
    reached through their own clients too, kept out of messages and logs
    (`engine.judge.redaction`)."""
    env = os.environ if environ is None else environ
    return tuple(found for name, found in env.items() if name.upper().endswith("_API_KEY") and found)
