"""One module per CLI command, each with ``configure(parser)`` and ``run(args, ctx) -> exit code``."""
