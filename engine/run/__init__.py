"""Batch runs: many items × scorers, concurrent, failure-isolated, resumable, priced.

Data into items (`datasets`; files by format in `readers`, the item shape, field mapping, ids and
problems in `items`), the entry points (`evals`), the concurrent runner (`runner`,
`item_scoring`), where results go (`sink`, `outfile`, `store`, `store_schema`, `resume`), the
summary and verdict (`summary`), cost and budget (`prices`, `budget`), the hooks a run reports
progress to (`reporting`), its settings (`settings`: `RunSettings`), where its items are scored
(`executor`: the `Executor` protocol, implemented here for this process and by `engine.ray`) and
what one attempt hands its executor (`attempt`: the run's context, destinations and source).

May import: `engine.core`, `engine.functions`, `engine.spec`, `engine.judge`, `engine.embedded`,
`engine.interpret`, `engine.bind`, `engine.traces`.
"""
