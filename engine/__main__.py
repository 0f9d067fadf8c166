"""`python -m engine` runs the `scorespec` command line."""

from .cli.main import main

main()
