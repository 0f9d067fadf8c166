"""The embedded judge: a GGUF model run in-process (`engine.embedded.llama`) behind the same provider
layer as hosted models (`engine.judge.provider.InstructorJudge`), so answers go through the same
instructor validation, re-asks and usage accounting; `engine.bind.stack.make_judge` puts the same
layers over it.

Model strings: ``local`` (Qwen2.5-Coder-1.5B-Instruct, the default), ``local-tiny``
(SmolLM2-135M-Instruct, smoke tests only) and ``llamacpp/PATH.gguf``, each with options after
``?`` (``local?slots=2&threads=1``: `engine.embedded.settings`). One model instance decodes up to
its ``slots`` calls at once; more wait for a slot (in worker threads, so the event loop keeps
running). The judge says so (``parallel_calls``), and a `for_each` stage's elements are asked
that many at once (`engine.interpret.fan_out`), the first alone (``lead_alone``) so that the prefix the
elements share is read once and kept in the prompt cache for the others.
"""

from __future__ import annotations

import asyncio
from typing import Any

from ..judge.clients import parse_mode
from ..judge.identity import provider_identity
from ..judge.provider import InstructorJudge, ProviderTraits
from ..judge.window import WindowCheck, configured_window

#: Ask a `for_each` stage's first element alone, then the others together (measured: see the
#: docs/benchmarks/performance.md).
LEAD_ALONE = True


def make_local_judge(model: str, *, mode: str | None = None, context_window: int | None = None) -> InstructorJudge:
    """The provider judge on the embedded model `model` (one try per call). The model is loaded
    on the judge's first call (or first token count), so a run whose every call the judge-call
    cache answers never loads it. Prompts are checked against the model's context (or a smaller
    `context_window` / ``$SCORESPEC_CONTEXT_WINDOW``; 0 = no check) with exact token counts,
    before the call (`engine.judge.window`). Raises `engine.embedded.llama.LocalJudgeError` at once when the
    `scorespec[local]` extra is missing, the model file is absent or not GGUF, or an option is
    bad; a file that cannot be loaded fails the first call, and every later one with the same
    error."""
    import instructor

    from .llama import INSTRUCTOR_MODE, check_binding, model_plan

    check_binding()
    path, settings, context = model_plan(model)
    configured = configured_window(context_window)
    limit = context if configured is None else min(configured, context) or None
    chat = _Deferred(model)
    window = WindowCheck(limit, model, count=lambda text: chat().count_tokens(text), byte_level=True)
    inst_mode = parse_mode(mode) if mode else INSTRUCTOR_MODE

    async def create(**kwargs: Any) -> Any:
        return await asyncio.to_thread(lambda: chat().create(**kwargs))

    client = instructor.AsyncInstructor(client=None, create=instructor.patch(create=create, mode=inst_mode),
                                        mode=inst_mode)
    # cached by the weights' SHA-256 (`engine.judge.weights`), never the name; `get_model` loads the
    # model with LocalChatModel's default sampling seed, 0
    identity = provider_identity(model, mode=inst_mode, weights=path, seed=0)
    # a fixed seed would repeat the first sample of a sampled question: sample i asks with seed i
    # llama.cpp reports each token's probabilities before the grammar and sampling (`engine.embedded.llama`)
    return InstructorJudge(client, model, ProviderTraits(window=window, identity=identity, sample_seeds=True,
                                                         logprobs=True, parallel_calls=settings.slots,
                                                         lead_alone=LEAD_ALONE))


class _Deferred:
    """The embedded model `model`, loaded by the first call (`engine.embedded.llama.get_model`); a load
    that failed raises its error again on every later call instead of loading again."""

    def __init__(self, model: str):
        self.model = model
        self._error: Exception | None = None

    def __call__(self) -> Any:
        from ..core.errors import LocalJudgeError
        from .llama import get_model

        if self._error is not None:
            raise LocalJudgeError(str(self._error))
        try:
            # the stage prompts already describe the answer; the grammar enforces its shape
            return get_model(self.model, schema_in_prompt=False)
        except LocalJudgeError as exc:
            self._error = exc
            raise
