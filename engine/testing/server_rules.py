"""What a model family's server enforces, for `engine.testing.fake_openai.FakeOpenAIServer(rules=…)`.

A rules object has ``refusal(request) -> (status, body) | None`` (a request the server refuses,
before any reply is taken from the script) and ``completed(request, completion) -> completion``
(the answer as that server sends it). The rules here follow the providers' documents:

- `ReasoningRules`: OpenAI's reasoning models (``gpt-5``, ``o3``, ``o4-mini``), as OpenAI's
  reasoning-models guide and chat-completions reference describe them: ``max_tokens`` is refused
  ("Use 'max_completion_tokens' instead"), ``temperature`` and ``top_p`` other than 1 are refused,
  ``logprobs``/``top_logprobs`` and the penalties are refused, ``reasoning_effort`` must be one of
  minimal/low/medium/high; hidden reasoning tokens are spent before the answer (by effort), counted
  in ``usage.completion_tokens`` and reported in
  ``usage.completion_tokens_details.reasoning_tokens``; an answer whose room
  (``max_completion_tokens``) the reasoning used up comes back empty with ``finish_reason: length``.
- `NoToolsRules`: a self-hosted server that refuses ``tools`` (HTTP 400), as some do.
- `NoUsageRules`: a server that sends no ``usage`` object.
- `NotCompletionRules`: a server that answers HTTP 200 with a body that is not a chat completion.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

__all__ = ["NoToolsRules", "NoUsageRules", "NotCompletionRules", "ReasoningRules", "refused"]

#: Reasoning tokens the fake spends per ``reasoning_effort`` (None: OpenAI's default, medium).
REASONING_SPENT = {"minimal": 8, "low": 64, "medium": 256, "high": 1024, None: 256}


def refused(message: str, param: str | None, code: str) -> tuple[int, dict]:
    """An HTTP 400 as OpenAI words it: ``{"error": {message, type, param, code}}``."""
    return 400, {"error": {"message": message, "type": "invalid_request_error", "param": param, "code": code}}


@dataclass
class ReasoningRules:
    """OpenAI's reasoning-model rules (see the module). `spent`: reasoning tokens per effort.
    `refusals` lists every refused request's parameter, in order (read it after the calls)."""

    spent: dict[Any, int] = field(default_factory=lambda: dict(REASONING_SPENT))
    refusals: list[str] = field(default_factory=list)

    def refusal(self, request: dict) -> tuple[int, dict] | None:
        found = self._refusal(request)
        if found is not None:
            self.refusals.append(str(found[1]["error"]["param"]))
        return found

    def _refusal(self, request: dict) -> tuple[int, dict] | None:
        if "max_tokens" in request:
            return refused("Unsupported parameter: 'max_tokens' is not supported with this model. "
                           "Use 'max_completion_tokens' instead.", "max_tokens", "unsupported_parameter")
        for name in ("temperature", "top_p"):
            if name in request and request[name] != 1:
                return refused(f"Unsupported value: '{name}' does not support {request[name]} with this model. "
                               "Only the default (1) value is supported.", name, "unsupported_value")
        for name in ("logprobs", "top_logprobs", "presence_penalty", "frequency_penalty", "logit_bias"):
            if name in request:
                return refused(f"Unsupported parameter: '{name}' is not supported with this model.", name,
                               "unsupported_parameter")
        effort = request.get("reasoning_effort")
        if effort is not None and effort not in ("minimal", "low", "medium", "high"):
            return refused(f"Invalid value: '{effort}'. Supported values are: 'minimal', 'low', 'medium', "
                           "and 'high'.", "reasoning_effort", "invalid_value")
        return None

    def completed(self, request: dict, completion: dict) -> dict:
        reasoning = self.spent.get(request.get("reasoning_effort"), self.spent[None])
        limit = request.get("max_completion_tokens")
        usage = completion["usage"]
        answer = usage["completion_tokens"]
        choice = completion["choices"][0]
        if isinstance(limit, int) and reasoning + answer > limit:
            reasoning = min(reasoning, limit)
            answer = 0 if reasoning >= limit else limit - reasoning
            choice["message"] = {"role": "assistant", "content": "" if answer == 0 else _cut(choice["message"])}
            choice["finish_reason"] = "length"
            choice["logprobs"] = None
        usage["completion_tokens"] = reasoning + answer
        usage["total_tokens"] = usage["prompt_tokens"] + usage["completion_tokens"]
        usage["completion_tokens_details"] = {"reasoning_tokens": reasoning, "accepted_prediction_tokens": 0,
                                              "rejected_prediction_tokens": 0, "audio_tokens": 0}
        return completion


def _cut(message: dict) -> str:
    """Half of a message's answer text (a tool call's arguments or its content)."""
    calls = message.get("tool_calls") or []
    text = calls[0]["function"]["arguments"] if calls else (message.get("content") or "")
    return text[: len(text) // 2]


class NoToolsRules:
    """A server that refuses any request with ``tools`` (HTTP 400), answering in content otherwise."""

    def refusal(self, request: dict) -> tuple[int, dict] | None:
        if "tools" in request or "tool_choice" in request:
            return refused("tools are not supported by this server", "tools", "unsupported_parameter")
        return None

    def completed(self, request: dict, completion: dict) -> dict:
        return completion


class NoUsageRules:
    """A server that sends its answers without a ``usage`` object."""

    def refusal(self, request: dict) -> tuple[int, dict] | None:
        return None

    def completed(self, request: dict, completion: dict) -> dict:
        completion.pop("usage", None)
        return completion


@dataclass
class NotCompletionRules:
    """A server whose HTTP 200 body is `body` (a JSON value) instead of a chat completion, for the
    first `times` requests."""

    body: Any
    times: int = 1

    def refusal(self, request: dict) -> tuple[int, dict] | None:
        return None

    def completed(self, request: dict, completion: dict) -> Any:
        if self.times > 0:
            self.times -= 1
            return json.loads(json.dumps(self.body))
        return completion
