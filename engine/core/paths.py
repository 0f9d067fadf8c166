"""Where scorespec keeps files between runs: the cache folder (joined model files, the judge-call
cache, the user's price table)."""

from __future__ import annotations

import pathlib

from .environment import value


def cache_dir() -> pathlib.Path:
    """Folder for joined model files: ``$SCORESPEC_CACHE``, else
    ``$XDG_CACHE_HOME/scorespec``, else ``~/.cache/scorespec`` (not created here)."""
    env = value("SCORESPEC_CACHE")
    if env:
        return pathlib.Path(env).expanduser()
    xdg = value("XDG_CACHE_HOME")
    base = pathlib.Path(xdg).expanduser() if xdg else pathlib.Path.home() / ".cache"
    return base / "scorespec"


__all__ = ["cache_dir"]
