"""The vocabulary every phase shares: errors and their kinds, the result of a scored item, what a
batch run needs of a scorer (`scorer_like`), run fields and chat messages, the item's language
(`language`), score directions, JSON Schema checks, label probabilities, answer schemas compiled
once (`answer_schema`), bounded regular expressions, the cache folder, the synchronous bridge, and
the environment variables scorespec reads, declared and read in one place (`environment`).

May import: nothing else in `engine` (the bottom layer).
"""
