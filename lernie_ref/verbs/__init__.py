"""One module per CLI verb: ``configure(parser)`` and ``run(namespace) -> str | None``."""
