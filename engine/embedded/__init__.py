"""The embedded judges: GGUF models shipped in PyPI packages, run in-process by llama.cpp.

Model files and their parts (`files`), GGUF headers (`gguf`), the llama.cpp chat model (`llama`),
its settings (`settings`) and the CPU threads each live model claims (`jobs`), the provider
layer over it (`judge`), and their rules for model strings (`checks`, registered with
`engine.judge.model.check_model` when this package is imported).

May import: `engine.core`, `engine.judge`.
"""

from . import checks as checks  # noqa: E402 - registers the embedded models' model-string checks
