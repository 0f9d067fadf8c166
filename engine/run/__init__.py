"""Batch runs: many items × scorers, concurrent, failure-isolated, resumable, priced.

Data into items (`datasets`; files by format in `readers`, the item shape, field mapping, ids and
problems in `items`), the entry points (`evals`), the concurrent runner (`runner`,
`item_scoring`), where results go (`sink`, `outfile`, `store`, `store_schema`, `resume`), the
summary and verdict (`summary`), cost and budget (`prices`, `budget`) and the hooks a run reports
progress to (`reporting`).

May import: `engine.core`, `engine.functions`, `engine.spec`, `engine.judge`, `engine.embedded`,
`engine.interpret`, `engine.bind`.
"""
