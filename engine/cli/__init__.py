"""The `scorespec` command line (typer). Nothing else in `engine` imports it but
`engine.__main__`; the console script is `engine.cli.main:main`. A batch command runs through the
library's public entry points (`engine.api`), which prepare the run and raise what the command
prints.

May import: anything in `engine`.
"""
