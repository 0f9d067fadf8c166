"""A scorer bound to its judge: the judge stack built in one place, and the public loader.

`stack.make_judge` composes the judge's layers (provider → retries → rate limit → cache →
progress); `load.load_scorer` loads a spec and gives it options and its judge; `recipe` carries a
scorer as text to another process (Ray actors) and builds it again there.

May import: `engine.core`, `engine.functions`, `engine.spec`, `engine.judge`, `engine.embedded`,
`engine.interpret`.
"""
