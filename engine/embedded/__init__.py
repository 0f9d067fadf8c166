"""The embedded judges: GGUF models shipped in PyPI packages, run in-process by llama.cpp.

Model files and their parts (`files`), GGUF headers (`gguf`), the llama.cpp chat model (`llama`),
its settings (`settings`) and the CPU threads each live model claims (`jobs`), and the provider
layer over it (`judge`).

May import: `engine.core`, `engine.judge`.
"""
