"""The ``realitycheck`` command line."""

from realitycheck.cli._app import cli, main

__all__ = ["cli", "main"]
