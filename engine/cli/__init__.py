"""The `scorespec` command line (typer). Nothing else in `engine` imports it but
`engine.__main__`; the console script is `engine.cli.main:main`.

May import: anything in `engine`.
"""
