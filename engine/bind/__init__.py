"""A scorer bound to its judge: the judge stack built in one place, and the public loader.

`stack`: `make_judge` builds a judge from a model string and its `engine.judge.settings.
JudgeSettings`, resolved once, composed under its layers (`engine.judge.stack`); `bind` gives a
scorer plan its judge (the model decided and checked once); `for_run` hands a built scorer a
run's parts (rate limit, cache, progress) before its judge is composed; `load.load_scorer` loads
a spec and binds it; `recipe` carries a scorer as text to another process (Ray actors) and binds
it again there.

May import: `engine.core`, `engine.functions`, `engine.spec`, `engine.judge`, `engine.embedded`,
`engine.interpret`.
"""
