"""`python -m engine` runs the `scorespec` command line."""

from engine.cli import main

main()
