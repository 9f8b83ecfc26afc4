"""`python -m agent.cli`: the same as the `steward` console script."""

from agent.cli.app import main

main()
