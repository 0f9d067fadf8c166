"""The embedded judge: a GGUF model run in-process (`engine.local`) behind the same provider
layer as hosted models (`engine.judge_provider.InstructorJudge`), so answers go through the same
instructor validation, re-asks and usage accounting; `engine.judge.make_judge` puts the same
layers over it.

Model strings: ``local`` (Qwen2.5-Coder-1.5B-Instruct, the default), ``local-tiny``
(SmolLM2-135M-Instruct, smoke tests only) and ``llamacpp/PATH.gguf``, each with options after
``?`` (``local?slots=2&threads=1``: `engine.local_settings`). One model instance decodes up to
its ``slots`` calls at once; more wait for a slot (in worker threads, so the event loop keeps
running). The judge says so (``parallel_calls``), and a `for_each` stage's elements are asked
that many at once (`engine.fan_out`), the first alone (``lead_alone``) so that the prefix the
elements share is read once and kept in the prompt cache for the others.
"""

from __future__ import annotations

import asyncio
from typing import Any

from .judge_clients import parse_mode
from .judge_identity import provider_identity
from .judge_provider import InstructorJudge
from .window import WindowCheck, configured_window

#: Ask a `for_each` stage's first element alone, then the others together (measured: see the
#: README's Performance).
LEAD_ALONE = True


def make_local_judge(model: str, *, mode: str | None = None, context_window: int | None = None) -> InstructorJudge:
    """The provider judge on the embedded model `model` (one try per call). Prompts are checked
    against the model's context (or a smaller `context_window` / ``$SCORESPEC_CONTEXT_WINDOW``;
    0 = no check) with exact token counts, before the call (`engine.window`). Raises
    `engine.local.LocalJudgeError` when the `scorespec[local]` extra is missing, the model file
    is absent or corrupt."""
    import instructor

    from .local import INSTRUCTOR_MODE, get_model

    configured = configured_window(context_window)
    # the stage prompts already describe the answer; the grammar enforces its shape
    chat = get_model(model, schema_in_prompt=False)
    limit = chat.context_length if configured is None else min(configured, chat.context_length) or None
    window = WindowCheck(limit, model, count=chat.count_tokens, byte_level=True)
    inst_mode = parse_mode(mode) if mode else INSTRUCTOR_MODE

    async def create(**kwargs: Any) -> Any:
        return await asyncio.to_thread(chat.create, **kwargs)

    client = instructor.AsyncInstructor(client=None, create=instructor.patch(create=create, mode=inst_mode),
                                        mode=inst_mode)
    # cached by the weights' SHA-256 (`engine.judge_weights`), never the name; `get_model` loads the
    # model with LocalChatModel's default sampling seed, 0
    identity = provider_identity(model, mode=inst_mode, weights=chat.path, seed=0)
    # a fixed seed would repeat the first sample of a sampled question: sample i asks with seed i
    # llama.cpp reports each token's probabilities before the grammar and sampling (`engine.local`)
    return InstructorJudge(client, model, window=window, identity=identity, sample_seeds=True, logprobs=True,
                           parallel_calls=chat.slots, lead_alone=LEAD_ALONE)
