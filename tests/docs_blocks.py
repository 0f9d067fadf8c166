"""The fenced code blocks of README.md and docs/**/*.md, read as the docs conventions say (how
the code blocks of the user-facing pages are written and tested).

A block is *run* (language ``python`` or ``bash``), a *file* (a ``title="PATH"`` attribute: written
to PATH in the page's working folder when its turn comes), or *shown* (any other language, or
none). The comment ``<!-- docs-test: WORDS -->`` on the line right before a fence marks it; the
words are ``slow``, ``ray``, ``redis``, ``skip install|container|bench`` and ``exit N``, in any
combination. `Block.problems` lists what a page author got wrong (an unknown word, a marker on a
block that is not run, ``sh`` for ``bash``…); `stray_markers` finds marker comments attached to
no fence.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

__all__ = ["Block", "MarkerWords", "doc_pages", "page_blocks", "parse_marker", "stray_markers", "MARKER"]

RUNNABLE = ("python", "bash")
# Languages that look runnable but are not run: the conventions ask for `bash` / `python`.
MISTAKEN = {"sh": "bash", "shell": "bash", "console": "bash", "zsh": "bash", "shell-session": "bash",
            "py": "python", "python3": "python"}
SKIP_REASONS = ("install", "container", "bench")
MARKER = re.compile(r"^\s*<!--\s*docs-test:(?P<words>.*?)-->\s*$")
# Commands a block may only hold when marked skip (installs, containers, the benchmark suite):
# such a block is reported and never run, so an unmarked one cannot change the machine.
EXEMPT_COMMANDS = re.compile(r"\b(?:pip3?|uv pip|apt-get|apt|npm|brew) install\b|\bdocker\b|\bpodman\b|"
                             r"\btests/(?:bench|reliability)/")
# The embedded judge named in a block: it must be marked slow (the fast suite never loads a model).
EMBEDDED_MODEL = re.compile(r"""--model[ =]['"]?(?:local\b|llamacpp/)|\bmodel\s*=\s*['"](?:local\b|llamacpp/)""")
_ANY_MARKER = re.compile(r"<!--\s*docs-test\b")
_OPENING = re.compile(r"^(?P<indent>[ \t]*)(?P<fence>`{3,}|~{3,})(?P<info>.*)$")
_TITLE = re.compile(r"""\btitle=(?:"(?P<double>[^"]*)"|'(?P<single>[^']*)')""")


@dataclass(frozen=True)
class MarkerWords:
    """What a ``docs-test`` comment says. exit_code: the exit status a bash block must end with."""

    slow: bool = False
    ray: bool = False
    redis: bool = False
    skip: str | None = None
    exit_code: int = 0
    problems: tuple[str, ...] = ()

    @property
    def any(self) -> bool:
        return self.slow or self.ray or self.redis or self.skip is not None or self.exit_code != 0


def parse_marker(words: str) -> MarkerWords:
    """The words of a marker comment (``"slow exit 1"``) as `MarkerWords`; an unknown word, a
    skip reason other than install/container/bench, or ``exit`` without a number is a problem."""
    found: dict = {}
    problems = []
    tokens = words.split()
    index = 0
    while index < len(tokens):
        word = tokens[index]
        following = tokens[index + 1] if index + 1 < len(tokens) else None
        if word in ("slow", "ray", "redis"):
            found[word] = True
        elif word == "skip":
            if following in SKIP_REASONS:
                found["skip"] = following
            else:
                problems.append(f"unknown skip reason {following!r} (only: {', '.join(SKIP_REASONS)})")
            index += 1
        elif word == "exit":
            if following is not None and following.isdigit():
                found["exit_code"] = int(following)
            else:
                problems.append(f"'exit' needs a number, got {following!r}")
            index += 1
        else:
            problems.append(f"unknown docs-test word {word!r} (known: slow, ray, redis, skip REASON, exit N)")
        index += 1
    if not tokens:
        problems.append("a docs-test comment without words")
    return MarkerWords(**found, problems=tuple(problems))


@dataclass(frozen=True)
class Block:
    """One fenced block. page: its file relative to the repository (posix); line: the 1-based
    line of its opening fence; text: its content, the fence's indentation removed."""

    page: str
    line: int
    lang: str
    title: str | None
    text: str
    marker: MarkerWords = field(default_factory=MarkerWords)

    @property
    def id(self) -> str:
        return f"{self.page}:{self.line}"

    @property
    def kind(self) -> str:
        """``file`` (has a title), ``run`` (python or bash) or ``shown``."""
        if self.title is not None:
            return "file"
        return "run" if self.lang in RUNNABLE else "shown"

    @property
    def heavy(self) -> bool:
        """Whether it belongs to the slow suite (the embedded model, or a Ray cluster)."""
        return self.marker.slow or self.marker.ray

    @property
    def problems(self) -> list[str]:
        """What the conventions forbid in this block, as messages."""
        found = list(self.marker.problems)
        if self.lang in MISTAKEN and self.title is None:
            found.append(f"language {self.lang!r} is never run: write {MISTAKEN[self.lang]!r}")
        if self.marker.any and self.kind != "run":
            found.append(f"a docs-test marker on a block that is not run ({self.kind}, language {self.lang!r})")
        if self.marker.exit_code and self.lang != "bash":
            found.append("'exit N' applies to bash blocks only")
        if self.unmarked_exemption():
            found.append(self.unmarked_exemption())
        return found

    def unmarked_exemption(self) -> str | None:
        """Why a runnable block must be marked (skip: it installs, runs a container or the
        benchmark suite; slow: it names the embedded judge) but is not; None when it is fine.
        Such a block is never run."""
        if self.kind != "run" or self.marker.skip:
            return None
        code = _without_comments(self.text)
        command = EXEMPT_COMMANDS.search(code) if self.lang == "bash" else None
        if command is not None:
            return (f"{command[0].strip()!r}: an install, container or benchmark command runs only when marked "
                    "<!-- docs-test: skip install|container|bench --> (so it is never run)")
        embedded = EMBEDDED_MODEL.search(code)
        if embedded is not None and not self.marker.slow:
            return f"{embedded[0]!r}: a block on the embedded judge must be marked <!-- docs-test: slow -->"
        return None

    def title_problem(self) -> str | None:
        """Why the title is no relative path inside the page's folder, or None."""
        if self.title is None:
            return None
        path = PurePosixPath(self.title)
        if not self.title.strip() or self.title != self.title.strip():
            return f"title {self.title!r}: empty or padded with spaces"
        if path.is_absolute() or "\\" in self.title or re.match(r"^[A-Za-z]:", self.title):
            return f"title {self.title!r}: an absolute path"
        if ".." in path.parts or not path.parts:
            return f"title {self.title!r}: leaves the page's folder"
        return None


def _without_comments(text: str) -> str:
    """`text` without its ``#`` comments (a ``#`` starting a line or after a space; quotes are not
    followed: a ``" #"`` inside a string cuts it too, which only hides words from the checks)."""
    return "\n".join(re.sub(r"(^|\s)#.*$", "", line) for line in text.splitlines())


def _fences(lines: list[str]) -> Iterator[tuple[int, int, str, str]]:
    """(opening index, closing index, info string, indentation) of each fenced block; an
    unclosed fence runs to the end of the page (as CommonMark reads it)."""
    index = 0
    while index < len(lines):
        opening = _OPENING.match(lines[index])
        if opening is None or (opening["fence"][0] == "`" and "`" in opening["info"]):
            index += 1
            continue
        fence = opening["fence"]
        closing = re.compile(rf"^[ \t]*{re.escape(fence[0])}{{{len(fence)},}}[ \t]*$")
        end = next((j for j in range(index + 1, len(lines)) if closing.match(lines[j])), len(lines))
        yield index, end, opening["info"].strip(), opening["indent"]
        index = end + 1


def _dedent(line: str, indent: str) -> str:
    return line[len(indent):] if line.startswith(indent) else line.lstrip(" \t")


def page_blocks(path: Path, root: Path) -> list[Block]:
    """Every fenced block of the Markdown file `path`, in order; `root`: what pages are named
    relative to."""
    lines = path.read_text(encoding="utf-8").splitlines()
    page = path.relative_to(root).as_posix()
    blocks = []
    for start, end, info, indent in _fences(lines):
        lang = info.split()[0].lstrip("{.").rstrip("}").lower() if info else ""
        title = _TITLE.search(info)
        before = MARKER.match(lines[start - 1]) if start > 0 else None
        blocks.append(Block(page=page, line=start + 1, lang=lang,
                            title=None if title is None else (title["double"] if title["double"] is not None
                                                              else title["single"]),
                            text="".join(_dedent(line, indent) + "\n" for line in lines[start + 1:end]),
                            marker=parse_marker(before["words"]) if before else MarkerWords()))
    return blocks


def stray_markers(path: Path, root: Path) -> list[str]:
    """``page:line: …`` for each docs-test comment outside code blocks that is not on the line
    right before a fence (so it marks nothing), or is not written as ``<!-- docs-test: … -->``."""
    lines = path.read_text(encoding="utf-8").splitlines()
    page = path.relative_to(root).as_posix()
    inside: set[int] = set()
    fence_starts: set[int] = set()
    for start, end, _info, _indent in _fences(lines):
        inside.update(range(start, end + 1))
        fence_starts.add(start)
    found = []
    for index, line in enumerate(lines):
        if index in inside or not _ANY_MARKER.search(line):
            continue
        if not MARKER.match(line):
            found.append(f"{page}:{index + 1}: write a marker alone on its line as <!-- docs-test: WORDS -->")
        elif index + 1 not in fence_starts:
            found.append(f"{page}:{index + 1}: a docs-test marker must sit on the line right before a fence")
    return found


def doc_pages(root: Path, extra: tuple[str, ...] = ()) -> list[Path]:
    """README.md, every docs/**/*.md except under docs/hooks/, then `extra` pages (relative to
    `root`), each once, in that order."""
    pages = [root / "README.md"] if (root / "README.md").is_file() else []
    docs = root / "docs"
    if docs.is_dir():
        pages += sorted(p for p in docs.rglob("*.md") if "hooks" not in p.relative_to(docs).parts[:1])
    pages += [root / name for name in extra if (root / name).is_file()]
    return list(dict.fromkeys(pages))
