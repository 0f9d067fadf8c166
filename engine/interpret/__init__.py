"""The interpreter: a compiled `ScorerPlan` run on one item with a judge.

`Scorer` binds a plan to its options and judge (`scorer`); the `Interpreter` runs the stages in
order (`interpreter`), a prompt stage's judge calls through `prompt_stages`, with the value checks
(expressions, JSON results, the score's range and rounding) in `values`; a ``for_each`` stage's
elements (`fan_out`), sampled answers reduced (`reduce`) and the fields a spec declares, resolved
per item (`declared_fields`).

May import: `engine.core`, `engine.functions`, `engine.spec`, `engine.judge`.
"""
