"""`scorespec new`: a starting spec and a prompt to edit, in the local ``scorer_specs/`` and
``prompts/`` folders.

With a parent (``--extends faithfulness``) the new spec extends it and overrides its first
prompt stage with a copy of that stage's template, ready to edit; everything else is inherited.
Without one — or on an abstract base such as ``judge_base`` — it is a one-question judge: a yes /
no verdict on a criterion written in the prompt.
"""

from __future__ import annotations

import re
from pathlib import Path

from .catalog import builtin_specs_dir, is_abstract, resolve_spec
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
  - id: {stage}  # merged into {parent}'s stage of this id
    prompt: {prompt}  # a copy of {parent}'s prompt: edit it
"""


def new_spec(spec_id: str, extends: str | None = None, root: Path | None = None, shadow: bool = False) -> list[Path]:
    """Write ``scorer_specs/ID.yaml`` and its prompt under `root` (default: the current folder);
    return the files written. Raises `ValueError` for an id that is not a spec id (lower case
    letters, digits, _), the id of a built-in scorer unless `shadow` (the local spec would replace
    it in this folder), or a parent with no prompt stage, `FileExistsError` rather than
    overwrite a file, and `SpecError` / `FileNotFoundError` for a parent that cannot be loaded."""
    if not _ID.match(spec_id):
        raise ValueError(f"{spec_id!r} is not a spec id: lower-case letters, digits and _, starting with a letter")
    if not shadow and (builtin_specs_dir() / f"{spec_id}.yaml").is_file():
        raise ValueError(f"{spec_id!r} is a built-in scorer: a local spec of that id would replace it in this folder. "
                         f"Pick another id (`scorespec new my_{spec_id} --extends {spec_id}`), or pass --shadow to "
                         f"replace it on purpose")
    root = root or Path.cwd()
    spec_path = root / "scorer_specs" / f"{spec_id}.yaml"
    name = spec_id.replace("_", " ").capitalize()
    if extends is None or is_abstract(resolve_spec(extends)):  # a base: the one-question judge on it
        files = {spec_path: _QUESTION_SPEC.format(id=spec_id, name=name, base=extends or "judge_base"),
                 root / "prompts" / spec_id / "judge.j2": _QUESTION_PROMPT}
    else:
        parent = load_spec(extends)
        stage = next((s for s in parent.stages if isinstance(s, PromptStagePlan)), None)
        if stage is None:
            raise ValueError(f"{extends} asks no judge, so it has no prompt to copy: write a spec with "
                             f"`extends: {extends}` and the options or stages you change")
        prompt = f"{spec_id}/{Path(stage.template.file).name}"
        files = {spec_path: _CHILD_SPEC.format(id=spec_id, parent=parent.id, name=name, stage=stage.id,
                                               prompt=prompt),
                 root / "prompts" / prompt: stage.template.source}
    taken = [str(path) for path in files if path.exists()]
    if taken:
        raise FileExistsError(f"not overwriting {', '.join(taken)}")
    for path, text in files.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return list(files)


__all__ = ["new_spec"]
