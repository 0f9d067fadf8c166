"""The embedded judge: a GGUF model run in-process (`engine.local`) behind the same
`InstructorJudge` as hosted providers, so answers go through the same instructor validation,
re-asks and usage accounting.

Model strings: ``local`` (Qwen2.5-Coder-1.5B-Instruct, the default), ``local-tiny``
(SmolLM2-135M-Instruct, smoke tests only) and ``llamacpp/PATH.gguf``. One model instance serves
one call at a time; concurrent calls queue for it (in worker threads, so the event loop keeps
running).
"""

from __future__ import annotations

import asyncio
from typing import Any

from .judge import InstructorJudge, RetryPolicy, parse_mode
from .window import WindowCheck, configured_window


def make_local_judge(model: str, *, retry: RetryPolicy | None = None, mode: str | None = None,
                     context_window: int | None = None) -> InstructorJudge:
    """A judge on the embedded model `model`. Prompts are checked against the model's context
    (or a smaller `context_window` / ``$SCORESPEC_CONTEXT_WINDOW``; 0 = no check) with exact
    token counts, before the call (`engine.window`). Raises `engine.local.LocalJudgeError` when
    the `scorespec[local]` extra is missing, the model file is absent or corrupt."""
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
    # a local model has no transport to fail; keep a small budget for transient binding errors
    return InstructorJudge(client, model, retry=retry or RetryPolicy(max_retries=1, base_s=0.1), window=window)
