"""The command line: ``python -m analysis`` (:mod:`analysis.cli.main`)."""
