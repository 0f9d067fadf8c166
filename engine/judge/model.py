"""Model strings: which judge model a scorer uses, and whether that string can work here.

A model is ``provider/model`` as instructor's `from_provider` takes it (``openai/gpt-4o-mini``,
``anthropic/claude-3-5-haiku-latest``, ``ollama/qwen2.5:7b``), or an embedded model: ``local``,
``local-tiny`` or ``llamacpp/PATH.gguf`` (`engine.embedded.llama`), with options after ``?``
(``local?slots=2&threads=1``, `engine.embedded.settings`). Precedence: the explicit argument >
``SCORESPEC_MODEL`` (which stands for the caller's model) > the spec's ``judge.model`` > ``local``
(`engine.judge.settings.JudgeSettings.resolved` decides it).

`check_model` is the one rule set: the hosted forms here, the embedded models' checks registered
by `engine.embedded.checks` (`register_model_check`, a prefix → check table). It runs once when a
scorer that uses a judge is bound (`engine.bind.stack.bind`), so a misspelled model or a missing
provider package is one clear error before the first item, not a failure on every item.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Callable

from ..core import environment
from ..core.errors import UserError, did_you_mean

DEFAULT_MODEL = "local"
LOCAL_PREFIXES = ("local", "local-tiny")  # the embedded models' names
LLAMACPP_PREFIX = "llamacpp/"

# provider → (the module its client needs, how to install it). The providers instructor's
# `from_provider` takes, as of instructor 1.x; `openai` is a dependency of scorespec itself.
PROVIDER_PACKAGES: dict[str, tuple[str, str]] = {
    "openai": ("openai", "pip install openai"),
    "azure_openai": ("openai", "pip install openai"),
    "anyscale": ("openai", "pip install openai"),
    "together": ("openai", "pip install openai"),
    "databricks": ("openai", "pip install openai"),
    "deepseek": ("openai", "pip install openai"),
    "openrouter": ("openai", "pip install openai"),
    "perplexity": ("openai", "pip install openai"),
    "ollama": ("openai", "pip install openai"),
    "anthropic": ("anthropic", "pip install 'scorespec[anthropic]'"),
    "google": ("google.genai", "pip install google-genai"),
    "generative-ai": ("google.genai", "pip install google-genai"),
    "gemini": ("google.generativeai", "pip install google-generativeai"),
    "vertexai": ("vertexai", "pip install google-cloud-aiplatform"),
    "cohere": ("cohere", "pip install cohere"),
    "groq": ("groq", "pip install groq"),
    "mistral": ("mistralai", "pip install mistralai"),
    "fireworks": ("fireworks", "pip install fireworks-ai"),
    "cerebras": ("cerebras.cloud.sdk", "pip install cerebras-cloud-sdk"),
    "writer": ("writerai", "pip install writer-sdk"),
    "xai": ("xai_sdk", "pip install xai-sdk"),
    "bedrock": ("botocore", "pip install boto3"),
    "litellm": ("litellm", "pip install litellm"),
}

FORMS = "'provider/model' (e.g. openai/gpt-4o-mini), 'local', 'local-tiny' or 'llamacpp/PATH.gguf'"


class ModelError(UserError, ValueError):
    """A model string that cannot work here: malformed, an unknown provider or embedded model,
    a provider whose package is not installed, or a ``llamacpp/`` path with no file. The
    message names the model, the accepted forms and the nearest known name."""


def resolve_model(explicit: str | None, spec_model: str | None) -> str:
    """The model string to use: explicit > ``$SCORESPEC_MODEL`` (it stands for the caller's
    model) > the spec's > `local`."""
    return explicit or environment.value("SCORESPEC_MODEL") or spec_model or DEFAULT_MODEL


def doctor_command(model: str, base_url: str | None = None) -> str:
    """The ``scorespec doctor`` command line that checks the judge `model` at `base_url` (None:
    the provider's own endpoint), in backticks, for advice in a message."""
    return f"`scorespec doctor --model {model}" + (f" --base-url {base_url}" if base_url else "") + "`"


def is_local(model: str) -> bool:
    """True for the embedded models (``local``, ``local-tiny``, ``llamacpp/PATH``), with or without
    options (``local?slots=2``)."""
    base = model.partition("?")[0]
    return base in LOCAL_PREFIXES or base.startswith(LLAMACPP_PREFIX)


#: Checks of the model strings that are not ``provider/model``, by prefix: a name ending in ``/``
#: matches every model string that starts with it (``llamacpp/``), any other name the model
#: string without its options after ``?`` (``local``). Registered by whoever builds those judges
#: (`engine.embedded.checks` for the embedded models), so every model string has one rule set.
MODEL_CHECKS: dict[str, Callable[[str], None]] = {}


def register_model_check(prefix: str, check: Callable[[str], None]) -> None:
    """Check the model strings `prefix` names (see `MODEL_CHECKS`) with ``check(model)``, which
    raises `ModelError` for one that cannot work here; replaces an earlier check of `prefix`."""
    MODEL_CHECKS[prefix] = check


def check_model(model: str) -> None:
    """Raise `ModelError` unless `model` names a judge this machine can build: a model string a
    registered check takes (`MODEL_CHECKS`: the embedded models, their options after ``?``
    included), or ``provider/model`` with a known provider whose package is importable and no
    options. Nothing is loaded or contacted."""
    if not isinstance(model, str) or not model.strip():
        raise ModelError(f"the judge model is empty; give {FORMS}")
    base = model.partition("?")[0]
    for prefix, check in MODEL_CHECKS.items():
        if base == prefix or prefix.endswith("/") and base.startswith(prefix):
            check(model)
            return
    if is_local(model):  # an embedded model string, and nothing registered to check it
        raise ModelError(f"model {model!r} is an embedded model, and the embedded judges are not loaded "
                         "(import engine.embedded)")
    if "?" in model:
        raise ModelError(f"model {model!r}: settings after '?' (slots, threads, poll, context) apply only to the "
                         f"embedded models ({', '.join(LOCAL_PREFIXES)}, llamacpp/PATH.gguf); a hosted model takes none")
    provider, slash, name = model.partition("/")
    if not slash or not provider or not name:
        hint = did_you_mean(model, LOCAL_PREFIXES) if "/" not in model else ""
        hint = f" ({hint})" if hint.startswith("did you mean") else ""
        raise ModelError(f"model {model!r} is not a known judge model: give {FORMS}{hint}")
    package = PROVIDER_PACKAGES.get(provider)
    if package is None and provider in _instructor_providers():
        return  # a provider this instructor knows and the table above does not (yet)
    if package is None:
        hint = did_you_mean(provider, PROVIDER_PACKAGES)
        raise ModelError(f"model {model!r}: unknown provider {provider!r}; give {FORMS}"
                         + (f" ({hint})" if hint.startswith("did you mean") else
                            f"; known providers: {', '.join(sorted(PROVIDER_PACKAGES))}"))
    module, install = package
    if not importable(module):
        raise ModelError(f"model {model!r} needs the Python package providing {module!r}, which is not installed: "
                         f"{install}")


def _instructor_providers() -> list[str]:
    """The providers the installed instructor's `from_provider` takes ([] if it does not say)."""
    try:
        from instructor.auto_client import supported_providers
    except ImportError:
        return []
    return list(supported_providers)


def importable(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):  # a parent package is missing, or a broken install
        return False


__all__ = ["DEFAULT_MODEL", "LOCAL_PREFIXES", "LLAMACPP_PREFIX", "MODEL_CHECKS", "ModelError", "PROVIDER_PACKAGES",
           "check_model", "importable", "is_local", "register_model_check", "resolve_model"]
