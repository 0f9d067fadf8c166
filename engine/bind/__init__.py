"""A scorer bound to its judge: the judge stack built in one place, and the public loader.

`stack` composes a judge's layers (the order declared once there, `stack.LAYERS`): `make_judge`
builds a judge from a model string and `engine.judge.settings.JudgeSettings`, `bind` gives a
scorer plan its judge, `rebind` gives a built scorer's judge a run's layers (rate limit, cache,
progress); `load.load_scorer` loads a spec and binds it; `recipe` carries a scorer as text to
another process (Ray actors) and binds it again there.

May import: `engine.core`, `engine.functions`, `engine.spec`, `engine.judge`, `engine.embedded`,
`engine.interpret`.
"""
