"""`python -m recall.cli …`, the same as the `recall` command."""

from recall.cli import main

main()
