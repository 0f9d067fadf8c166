"""The judge: asking a model for an answer that satisfies a contract.

The call interface (`call`: `JudgeCall`, `JudgeAnswer`, `Judge`), what an answer must satisfy
(`contract`), the layers of a judge — the provider through instructor (`provider`, `clients`,
`window`, `redaction`), transport retries (`retries`), the rate limit (`rate_limit`), progress
(`progress`) — model strings (`model`), a provider's part of a cache key (`identity`, `weights`),
how a judge was built (`recipe`), a judge's settings as one value (`settings.JudgeSettings`),
and the judge-call cache with its SQLite and Redis back ends (`engine.judge.cache`). The layers
are stacked in one place, `engine.bind.stack.compose`, in the order `engine.bind.stack.LAYERS`
declares.

May import: `engine.core`.
"""
