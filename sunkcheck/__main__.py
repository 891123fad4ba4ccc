"""`python -m sunkcheck` runs the command line."""

from sunkcheck.cli import entry

entry()
