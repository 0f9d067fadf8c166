"""`scorespec new`: a starting spec and a prompt to edit, in the local ``scorer_specs/`` and
``prompts/`` folders.

With a parent (``--extends faithfulness``) the new spec extends it and overrides prompt stages
with copies of their templates, ready to edit: the first prompt stage by default, the stages
named (``--stage ID``, repeatable), or every one (``--all-stages``); everything else is
inherited, and the spec lists the parent's other prompt stages as commented-out entries to
uncomment once their prompt is copied. Without a parent — or on an abstract base such as
``judge_base`` — it is a one-question judge: a yes / no verdict on a criterion written in the
prompt.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from ..core.errors import UserError
from .catalog import builtin_prompts_dir, builtin_specs_dir, is_abstract, resolve_spec
from .compile import load_spec
from .plans import PromptStagePlan

_ID = re.compile(r"^[a-z][a-z0-9_]*$")

_QUESTION_PROMPT = """\
Does the OUTPUT meet this criterion? Replace this sentence with your criterion, for example:
the OUTPUT answers the question in the INPUT without inventing facts.

{% if run.input_text %}INPUT:
<<<
{{ run.input_text }}
>>>

{% endif %}OUTPUT:
<<<
{{ run.output_text }}
>>>

Give the verdict first, then a short reason (at most 20 words).
Answer as {"verdict": "yes" | "no", "reason": "..."}.
"""

_QUESTION_SPEC = """\
format: 1
id: {id}
extends: {base}  # the judge block and the scale option of the built-in scorers
name: {name}
description: Whether the output meets the criterion written in prompts/{id}/judge.j2.
version: 1

fields:
  output: {{required: true, description: The text judged.}}
  input: {{description: What the output responds to.}}

stages:
  - id: judge
    prompt: {id}/judge.j2
    output_schema:
      type: object
      required: [verdict, reason]
      additionalProperties: false
      properties:
        verdict: {{type: string, enum: ["yes", "no"]}}
        reason: {{type: string, maxLength: 300}}

score:
  formula: "(1 if judge.verdict == 'yes' else 0) * options.scale"

reason:
  - id: judged
    template: "{{{{ judge.reason }}}}"
"""

_CHILD_SPEC = """\
format: 1
id: {id}
extends: {parent}  # everything not written here comes from {parent}
name: {name}
version: 1

stages:
{stages}"""

_COPIED_STAGE = """\
  - id: {stage}  # merged into {parent}'s stage of this id
    prompt: {prompt}  # a copy of {parent}'s prompt: edit it
"""

_INHERITED_HEAD = """\
  # inherited as they are; to change one, copy its prompt into prompts/{id}/ and uncomment its lines:
"""

_INHERITED_STAGE = """\
  # - id: {stage}
  #   prompt: {prompt}  # from {source}
"""


class StageChoiceError(UserError, ValueError):
    """``--stage`` / ``--all-stages`` that cannot be followed: a stage id the parent has no prompt
    stage of (the message lists its prompt stages), or a stage asked for without a parent."""


@dataclass(frozen=True)
class StageCopy:
    """A prompt stage of the parent as the new child spec treats it: `stage` (its id), `source`
    (the parent's template file, resolved), `prompt` (the copy's name under ``prompts/``,
    ``ID/NAME``) and `copied` (False: inherited as it is, listed commented out in the spec)."""

    stage: str
    source: Path
    prompt: str
    copied: bool


def prompt_stages(parent: str) -> list[tuple[str, Path]]:
    """The prompt stages of the scorer `parent` (an id or a spec path), in order: (stage id, its
    template file, resolved). Raises `SpecError` / `FileNotFoundError` for a parent that cannot
    be loaded."""
    plan = load_spec(parent)
    return [(s.id, Path(s.template.file).resolve()) for s in plan.stages if isinstance(s, PromptStagePlan)]


def stage_copies(spec_id: str, parent: str, stages: Sequence[str] | None = None,
                 all_stages: bool = False) -> list[StageCopy]:
    """The parent's prompt stages, in order, each copied or not as `new_spec` does it (see
    there). Each copy is ``ID/NAME`` (the parent's file name; ``STAGE_NAME`` when two stages'
    different files share a name). Raises `ValueError` for a parent with no prompt stage,
    `StageChoiceError` as `chosen_stages`, and what `prompt_stages` raises."""
    found = prompt_stages(parent)
    if not found:
        raise ValueError(f"{parent} asks no judge, so it has no prompt to copy: write a spec with "
                         f"`extends: {parent}` and the options or stages you change")
    copied = set(chosen_stages(parent, [stage for stage, _ in found], stages, all_stages))
    names: dict[Path, str] = {}  # source file → the copy's name under prompts/ID/
    out = []
    for stage, source in found:
        if source not in names:
            names[source] = source.name if source.name not in names.values() else f"{stage}_{source.name}"
        out.append(StageCopy(stage, source, f"{spec_id}/{names[source]}", stage in copied))
    return out


def prompt_name(path: Path) -> str:
    """How a spec names the prompt file `path`: relative to the built-in prompts or the local
    ``prompts/`` folder (``faithfulness/verify_claim.j2``), else the path itself."""
    for folder in (builtin_prompts_dir(), Path.cwd() / "prompts"):
        try:
            return path.relative_to(folder.resolve()).as_posix()
        except ValueError:
            continue
    return str(path)


def chosen_stages(parent: str, available: Sequence[str], stages: Sequence[str] | None, all_stages: bool) -> list[str]:
    """The prompt stages to copy, in the parent's order: every one with `all_stages`, those in
    `stages`, else the first. Raises `StageChoiceError` for both given, or an id not among
    `available` (the parent's prompt stage ids)."""
    if all_stages and stages:
        raise StageChoiceError("give --stage or --all-stages, not both")
    if all_stages:
        return list(available)
    unknown = [s for s in dict.fromkeys(stages or ()) if s not in available]
    if unknown:
        which = ", ".join(repr(s) for s in unknown)
        raise StageChoiceError(f"{parent} has no prompt stage {which} (its prompt stages: {', '.join(available)})")
    return [s for s in available if s in set(stages or available[:1])]


def new_spec(spec_id: str, extends: str | None = None, root: Path | None = None, shadow: bool = False,
             stages: Sequence[str] | None = None, all_stages: bool = False) -> list[Path]:
    """Write ``scorer_specs/ID.yaml`` and its prompts under `root` (default: the current folder);
    return the files written, the spec first, then each copied prompt in stage order. With a
    parent, `stages` names the prompt stages whose prompts are copied (default: the first),
    `all_stages` copies every one.

    Raises `ValueError` for an id that is not a spec id (lower case letters, digits, _), the id
    of a built-in scorer unless `shadow` (the local spec would replace it in this folder), or a
    parent with no prompt stage, or a `root` whose ``scorer_specs/`` is the built-in catalogue
    (the source checkout); `StageChoiceError` (a `ValueError`) for a stage the parent has
    no prompt stage of, or stages asked for without a parent to copy from; `FileExistsError`
    rather than overwrite a file, and `SpecError` / `FileNotFoundError` for a parent that
    cannot be loaded. Nothing is written when it raises."""
    if not _ID.match(spec_id):
        raise ValueError(f"{spec_id!r} is not a spec id: lower-case letters, digits and _, starting with a letter")
    if not shadow and (builtin_specs_dir() / f"{spec_id}.yaml").is_file():
        raise ValueError(f"{spec_id!r} is a built-in scorer: a local spec of that id would replace it in this folder. "
                         f"Pick another id (`scorespec new my_{spec_id} --extends {spec_id}`), or pass --shadow to "
                         f"replace it on purpose")
    root = root or Path.cwd()
    if (root / "scorer_specs").resolve() == builtin_specs_dir().resolve():
        raise ValueError(f"{root / 'scorer_specs'} is scorespec's own catalogue of built-in scorers (this folder is "
                         "its source checkout): a spec written there would ship as a built-in. Run `scorespec new` "
                         "in your project's folder (it writes its scorer_specs/ and prompts/ there)")
    spec_path = root / "scorer_specs" / f"{spec_id}.yaml"
    name = spec_id.replace("_", " ").capitalize()
    if extends is None or is_abstract(resolve_spec(extends)):  # a base: the one-question judge on it
        if stages or all_stages:
            raise StageChoiceError(f"--stage and --all-stages copy a parent's prompts: they work only with --extends "
                                   f"SCORER ({extends or 'no parent'} gives a one-question judge with its own prompt)")
        files = {spec_path: _QUESTION_SPEC.format(id=spec_id, name=name, base=extends or "judge_base"),
                 root / "prompts" / spec_id / "judge.j2": _QUESTION_PROMPT}
    else:
        files = _child_files(spec_id, extends, name, root, stages, all_stages, spec_path)
    taken = [str(path) for path in files if path.exists()]
    if taken:
        raise FileExistsError(f"not overwriting {', '.join(taken)}")
    for path, text in files.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return list(files)


def _child_files(spec_id: str, extends: str, name: str, root: Path, stages: Sequence[str] | None,
                 all_stages: bool, spec_path: Path) -> dict[Path, str]:
    """A child spec of `extends` (at `spec_path`) and the copies of the chosen stages' prompts:
    path → text, the spec first."""
    parent = load_spec(extends)
    copies = stage_copies(spec_id, extends, stages, all_stages)
    entries = [_COPIED_STAGE.format(stage=c.stage, parent=parent.id, prompt=c.prompt) for c in copies if c.copied]
    inherited = [_INHERITED_STAGE.format(stage=c.stage, prompt=c.prompt, source=prompt_name(c.source))
                 for c in copies if not c.copied]
    if inherited:
        entries += [_INHERITED_HEAD.format(id=spec_id), *inherited]
    spec = _CHILD_SPEC.format(id=spec_id, parent=parent.id, name=name, stages="".join(entries))
    prompts = {root / "prompts" / c.prompt: c.source.read_text(encoding="utf-8") for c in copies if c.copied}
    return {spec_path: spec, **prompts}


__all__ = ["StageChoiceError", "StageCopy", "chosen_stages", "new_spec", "prompt_name", "prompt_stages", "stage_copies"]
