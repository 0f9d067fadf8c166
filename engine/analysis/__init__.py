"""Judge quality and version comparison: `calibrate` (agreement with human labels) and
`compare` (paired statistics of two or more versions).

May import: `engine.run` and what it may import.
"""
