"""Where specs and templates come from.

- A path (anything with a ``/`` or ending in ``.yaml``/``.yml``) loads that file.
- A bare name loads ``scorer_specs/NAME.yaml`` under the current directory when it exists (a
  local spec shadows a built-in of the same id), else the built-in spec, else one of the engine's
  own specs (`engine_specs_dir`: not scorers, never listed).
- A spec's templates resolve first from a ``prompts/`` folder beside the spec's own folder, then
  from the built-in ``prompts/``.

Built-ins live in ``scorer_specs/`` and ``prompts/`` at the project root in a checkout or an
editable install, and in ``engine/_builtin/`` inside an installed wheel.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

_PACKAGE = Path(__file__).resolve().parent.parent  # the engine package


@lru_cache(maxsize=1)
def builtin_root() -> Path:
    """The folder holding the built-in ``scorer_specs/`` and ``prompts/``."""
    wheel = _PACKAGE / "_builtin"
    if (wheel / "scorer_specs").is_dir():
        return wheel
    return _PACKAGE.parent


def builtin_specs_dir() -> Path:
    return builtin_root() / "scorer_specs"


def builtin_prompts_dir() -> Path:
    return builtin_root() / "prompts"


def engine_specs_dir() -> Path:
    """The engine's own specs, run by its commands rather than as scorers (``scorespec align``'s
    optimiser): they resolve by id after the built-ins, and the catalogue never lists them."""
    return _PACKAGE / "alignment" / "specs" / "scorer_specs"


def is_path(name: str) -> bool:
    return "/" in name or "\\" in name or name.endswith((".yaml", ".yml"))


def shown_name(text: str, limit: int = 80) -> str:
    """`text` as a message shows a name or path: cut to `limit` characters, the cut said."""
    return text if len(text) <= limit else f"{text[:limit]}… ({len(text):,} characters)"


def is_file(path: Path) -> bool:
    """Whether `path` is a file; False, not an `OSError`, for a path the system cannot look up (a
    name longer than the file system allows, a NUL byte)."""
    try:
        return path.is_file()
    except (OSError, ValueError):
        return False


def too_long(text: str) -> str | None:
    """Why the path `text` can name no file (a part longer than `NAME_MAX`, the whole longer
    than `PATH_MAX`), or None."""
    longest = max((len(part.encode("utf-8", "surrogatepass")) for part in Path(text).parts), default=0)
    if longest > NAME_MAX:
        return f"longer than a file name can be ({longest:,} bytes; at most {NAME_MAX})"
    if len(text.encode("utf-8", "surrogatepass")) > PATH_MAX:
        return f"longer than a path can be (at most {PATH_MAX:,} bytes)"
    return None


NAME_MAX = 255
"""The longest file name (one part of a path), in bytes, on the common file systems."""
PATH_MAX = 4096
"""The longest path, in bytes (Linux)."""


def resolve_spec(name_or_path: str | Path, cwd: Path | None = None) -> Path:
    """The spec file for a name or path. Raises `FileNotFoundError` naming what was tried and,
    for a name, the nearest known ids (a name or path too long to name a file says so)."""
    text = str(name_or_path)
    if isinstance(name_or_path, Path) or is_path(text):
        path = Path(text)
        if not is_file(path):
            why = too_long(text)
            said = f" (the name is {why})" if why else ""
            raise FileNotFoundError(f"spec file not found: {shown_name(text)}{said}")
        return path
    if too_long(f"{text}.yaml"):
        raise FileNotFoundError(f"no scorer named {shown_name(text)!r}: a scorer's id names its file "
                                f"ID.yaml, and this one is {too_long(text + '.yaml')}")
    local = (cwd or Path.cwd()) / "scorer_specs" / f"{text}.yaml"
    if is_file(local):
        return local
    builtin = builtin_specs_dir() / f"{text}.yaml"
    if is_file(builtin):
        return builtin
    tool = engine_specs_dir() / f"{text}.yaml"
    if is_file(tool):  # the engine's own specs (align's optimiser): render-able by id, never listed
        return tool
    from ..core.errors import did_you_mean

    if is_file(local.with_suffix(".yml")):  # read only as a path: a name finds *.yaml files
        raise FileNotFoundError(f"no scorer named {text!r}: scorer_specs/{text}.yml is not read by name, as spec "
                                f"files end in .yaml (rename it {text}.yaml, or give its path)")
    hint = did_you_mean(text, [e.id for e in list_specs(cwd)])
    raise FileNotFoundError(f"no scorer named {text!r}" + (f" ({hint})" if hint else ""))


def prompt_dirs(spec_file: Path) -> list[Path]:
    """Template search path for a spec: ``prompts/`` beside the spec's folder (even when it does
    not exist, so a "not found" names it), then built-in."""
    dirs = [spec_file.resolve().parent.parent / "prompts"]
    builtin = builtin_prompts_dir().resolve()
    if builtin not in dirs:
        dirs.append(builtin)
    return dirs


@dataclass(frozen=True)
class CatalogEntry:
    """A spec in the catalogue. abstract: a base for other specs (``abstract: true``), not run."""

    id: str
    path: Path
    origin: str  # "builtin" | "local"
    shadows_builtin: bool = False
    abstract: bool = False


_ABSTRACT = re.compile(r"^abstract:[ \t]*true[ \t]*(#.*)?$", re.MULTILINE)


def is_abstract(path: Path) -> bool:
    """Whether the spec file says ``abstract: true`` at its top level (read as text: cheap)."""
    try:
        return _ABSTRACT.search(path.read_text(encoding="utf-8", errors="replace")) is not None
    except OSError:
        return False


def list_specs(cwd: Path | None = None) -> list[CatalogEntry]:
    """Built-in and local specs, by id; a local spec replaces a built-in of the same id."""
    entries: dict[str, CatalogEntry] = {}
    for path in sorted(builtin_specs_dir().glob("*.yaml")):
        entries[path.stem] = CatalogEntry(path.stem, path, "builtin", abstract=is_abstract(path))
    local_dir = (cwd or Path.cwd()) / "scorer_specs"
    if local_dir.is_dir() and local_dir.resolve() != builtin_specs_dir().resolve():
        for path in sorted(local_dir.glob("*.yaml")):
            entries[path.stem] = CatalogEntry(path.stem, path, "local", path.stem in entries, is_abstract(path))
    return sorted(entries.values(), key=lambda e: e.id)
