"""What a hosted judge's server can do, found with a handful of tiny requests (``scorespec doctor``).

`probe(model, base_url=…, api_key=…)` asks an OpenAI-compatible endpoint (``openai/…``,
``ollama/…``, or any server given by its base URL) and returns a `Findings`:

- ``reachable``: the server answered at all (``GET /models`` or a chat request, any status);
- ``key_accepted``: a chat request was not refused with HTTP 401 or 403;
- ``modes``: each structured-output mode (``tools``, ``json_schema``, ``json_object``,
  ``md_json``) → whether a one-field answer came back readable in it;
- ``logprobs``: whether a request asking for token probabilities got them;
- ``refused``: each of ``logprobs``, ``temperature``, ``top_p``, ``max_tokens``, ``seed`` → whether the server
  refused a request carrying it (an HTTP 400);
- ``reasoning_tokens``: the reasoning tokens the basic request reported (None: not reported);
- ``context_window``: the window the server states for the model in ``/models`` (vLLM's
  ``max_model_len``, ``context_length``, ``context_window``), None when it states none;
- ``family``, ``mode``, ``why``: the request family (`engine.judge.model_params`) and the
  structured-output mode scorespec will use, and why; ``problem``: the one-line reason a scorer
  cannot run (None when it can).

Each probe request is as small as a request can be (a few tokens in, at most 16 out, plus a
reasoning model's budget). Uses the ``openai`` package's synchronous client with no retries.
"""

from __future__ import annotations

import json
import re
from dataclasses import asdict, dataclass, field
from typing import Any

from .model_params import shape_for
from .redaction import kept_secrets, redact
from .refusals import server_said

__all__ = ["Findings", "MODES", "PARAMS", "probe"]

MODES = ("tools", "json_schema", "json_object", "md_json")
PARAMS = {"temperature": 0.0, "top_p": 0.5, "max_tokens": 16, "seed": 1}
_SCHEMA = {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"],
           "additionalProperties": False}
_ASK = 'Answer with the JSON object {"ok": true} and nothing else.'
_ANSWER_ROOM = 32
#: The budget a probe gives a reasoning model (tokens): enough for a one-word answer.
PROBE_REASONING_TOKENS = 512


@dataclass
class Findings:
    """What `probe` found (see the module). `errors`: per probe, the server's words when it
    refused or failed (kept for the report)."""

    model: str
    base_url: str | None
    reachable: bool = False
    key_accepted: bool | None = None
    modes: dict[str, bool] = field(default_factory=dict)
    logprobs: bool | None = None
    refused: dict[str, bool] = field(default_factory=dict)
    reasoning_tokens: int | None = None
    context_window: int | None = None
    family: str = "chat"
    mode: str | None = None
    why: str = ""
    problem: str | None = None
    errors: dict[str, str] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        """Whether a scorer can run against this judge."""
        return self.problem is None

    def to_json_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["ok"] = self.ok
        return out


def probe(model: str, *, base_url: str | None = None, api_key: str | None = None, mode: str | None = None,
          timeout_s: float = 20.0, family: str | None = None) -> Findings:
    """Probe the server behind `model` (``provider/name``; see the module). `mode`: the mode the
    user chose (``tools``, ``json_schema``, ``json``/``json_object``, ``md_json``); None: the
    default, ``tools``. Never raises for what the server does; raises ImportError without the
    ``openai`` package."""
    import openai

    from ..core import environment
    from .settings import OLLAMA_DEFAULT_URL

    provider, _, name = model.partition("/")
    if provider == "ollama":
        base_url = base_url or environment.value("OLLAMA_BASE_URL") or OLLAMA_DEFAULT_URL
        api_key = api_key or "ollama"
    base_url = base_url or environment.value("OPENAI_BASE_URL")
    key = api_key or environment.value("OPENAI_API_KEY") or ("not-needed" if base_url else None)
    shape = shape_for(model, family, PROBE_REASONING_TOKENS)
    found = Findings(model, base_url, family=shape.family or shape.table_family)
    if key is None:
        found.problem = "no API key: set OPENAI_API_KEY (or give --base-url for a server that needs none)"
        return found
    client = openai.OpenAI(api_key=key, base_url=base_url, max_retries=0, timeout=timeout_s)
    asker = _Asker(client, name, shape, kept_secrets((key,)))
    found.context_window, models_status = _listed_window(client, name)
    found.reachable = models_status is not None
    basic = asker.ask("basic", {})
    if basic.status is None and not found.reachable:
        found.problem = f"the server cannot be reached at {base_url or 'the provider'} ({basic.error})"
        return found
    found.reachable = True
    found.key_accepted = basic.status not in (401, 403)
    if not found.key_accepted:
        found.errors["basic"] = basic.error
        found.problem = f"the server refused the API key ({basic.error})"
        return found
    if basic.status == 404:
        found.problem = (f"HTTP 404 from the chat-completions path: check --base-url (it usually ends in /v1) "
                         f"and the model name ({basic.error})")
        return found
    if basic.completion is not None:
        found.reasoning_tokens = _reasoning_tokens(basic.completion)
    elif basic.error:
        found.errors["basic"] = basic.error
    for mode_name in MODES:
        reply = asker.ask(mode_name, _mode_params(mode_name))
        found.modes[mode_name] = reply.completion is not None and _reads_ok(reply.completion, mode_name)
        if reply.error:
            found.errors[mode_name] = reply.error
    reply = asker.ask("logprobs", {"logprobs": True, "top_logprobs": 2}, raw=True)
    found.logprobs = reply.completion is not None and _has_logprobs(reply.completion)
    found.refused["logprobs"] = reply.status == 400
    if reply.error:
        found.errors["logprobs"] = reply.error
    for param, value in PARAMS.items():
        reply = asker.ask(param, {param: value}, raw=True)
        found.refused[param] = reply.status == 400
        if reply.status == 400:
            found.errors[param] = reply.error
    _choose_mode(found, mode)
    return found


def _choose_mode(found: Findings, chosen: str | None) -> None:
    """The mode scorespec will use and why; the problem when none works."""
    wanted = {"json": "json_object"}.get(chosen or "", chosen)
    if wanted:
        found.mode = wanted
        if found.modes.get(wanted):
            found.why = f"{wanted}: the mode you chose, and it works"
        else:
            works = [m for m, ok in found.modes.items() if ok]
            found.problem = (f"the mode you chose, {wanted}, does not work here" +
                             (f"; these do: {', '.join(works)} (doctor's --mode, and $SCORESPEC_MODE for a run)"
                              if works else ""))
        return
    if found.modes.get("tools"):
        found.mode, found.why = "tools", "tools: the default, and the server answers tool calls"
        return
    works = [m for m, ok in found.modes.items() if ok]
    if not works:
        found.problem = "no structured-output mode works (tools, json_schema, json_object, md_json all failed)"
        return
    found.mode = works[0]
    found.problem = (f"the default mode, tools, does not work here; {works[0]} does: set SCORESPEC_MODE={works[0]} "
                     "for the run (or mode= in Python)")


@dataclass
class _Reply:
    status: int | None = None
    completion: Any = None
    error: str = ""


class _Asker:
    """One tiny chat request per probe, with the family's parameters (or, `raw`, only a plain
    limit and the parameter probed)."""

    def __init__(self, client: Any, name: str, shape: Any, secrets: Any = ()):
        self.client, self.name, self.shape, self.secrets = client, name, shape, secrets

    def ask(self, what: str, extra: dict[str, Any], *, raw: bool = False) -> _Reply:
        from .call import JudgeCall

        call = JudgeCall(what, [], None, max_tokens=_ANSWER_ROOM)  # type: ignore[arg-type]
        base = {} if raw else self.shape.params(call, False)
        if raw and "max_tokens" not in extra:
            family = self.shape.family_for(call)
            base = {family.limit: _ANSWER_ROOM + (self.shape.budget(call) if family.reasoning else 0)}
        body = {"model": self.name, "messages": [{"role": "user", "content": _ASK}], **base, **extra}
        try:
            completion = self.client.chat.completions.create(**body)
        except Exception as exc:  # the SDK's errors: a status, or no answer at all
            status = getattr(exc, "status_code", None)
            said = server_said(exc, redact=lambda text: redact(text, self.secrets))
            return _Reply(status if isinstance(status, int) else None, None, said)
        return _Reply(200, completion, "")


def _mode_params(mode: str) -> dict[str, Any]:
    if mode == "tools":
        tool = {"type": "function", "function": {"name": "answer", "description": "The answer.",
                                                 "parameters": _SCHEMA}}
        return {"tools": [tool], "tool_choice": {"type": "function", "function": {"name": "answer"}}}
    if mode == "json_schema":
        return {"response_format": {"type": "json_schema",
                                    "json_schema": {"name": "answer", "schema": _SCHEMA, "strict": True}}}
    if mode == "json_object":
        return {"response_format": {"type": "json_object"}}
    return {}


def _reads_ok(completion: Any, mode: str) -> bool:
    """Whether the answer holds a JSON object with a boolean ``ok`` where `mode` puts it."""
    try:
        message = completion.choices[0].message
    except (AttributeError, IndexError, TypeError):
        return False
    if mode == "tools":
        calls = getattr(message, "tool_calls", None) or []
        text = calls[0].function.arguments if calls else None
    else:
        text = getattr(message, "content", None)
        if text and mode == "md_json":
            fenced = re.search(r"\{.*\}", text, re.DOTALL)
            text = fenced.group(0) if fenced else text
    try:
        data = json.loads(text or "")
    except (TypeError, ValueError):
        return False
    return isinstance(data, dict) and isinstance(data.get("ok"), bool)


def _has_logprobs(completion: Any) -> bool:
    try:
        return bool(completion.choices[0].logprobs.content)
    except (AttributeError, IndexError, TypeError):
        return False


def _reasoning_tokens(completion: Any) -> int | None:
    details = getattr(getattr(completion, "usage", None), "completion_tokens_details", None)
    value = getattr(details, "reasoning_tokens", None)
    return value if isinstance(value, int) else None


def _listed_window(client: Any, name: str) -> tuple[int | None, int | None]:
    """(the context window ``GET /models`` states for `name`, the status it answered with; None:
    no answer)."""
    try:
        page = client.models.list()
    except Exception as exc:
        status = getattr(exc, "status_code", None)
        return None, status if isinstance(status, int) else None
    for entry in getattr(page, "data", None) or []:
        if getattr(entry, "id", None) != name:
            continue
        extra = entry.model_extra or {}
        for key in ("max_model_len", "context_length", "context_window"):
            if isinstance(extra.get(key), int):
                return extra[key], 200
    return None, 200
