"""The interpreter: a compiled `ScorerPlan` run on one item with a judge.

`Scorer` runs the stages in order (`scorer`); a `for_each` stage's elements (`fan_out`), sampled
answers reduced (`reduce`) and the fields a spec declares, resolved per item (`declared_fields`).

May import: `engine.core`, `engine.functions`, `engine.spec`, `engine.judge`.
"""
