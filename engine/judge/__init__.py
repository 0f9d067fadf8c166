"""The judge: asking a model for an answer that satisfies a contract.

The call interface (`call`: `JudgeCall`, `JudgeAnswer`, `Judge`), what an answer must satisfy
(`contract`), the layers of a judge — the provider through instructor (`provider`, `clients`,
`window`, `redaction`), transport retries (`retries`), the rate limit (`rate_limit`), progress
(`progress`) — stacked in one place, `stack.compose`, in the order `stack.LAYERS` declares (with
the parts a run adds: `stack.JudgeParts`); model strings and the one model check (`model`), a
provider's part of a cache key (`identity`, `weights`), how a judge was built (`recipe`), a
judge's settings as one value, resolved once (`settings.JudgeSettings`), and the judge-call cache
with its SQLite and Redis back ends (`engine.judge.cache`). The environment comes through
`engine.core.environment`.

May import: `engine.core`.
"""
