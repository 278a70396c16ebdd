"""One module per `roscope` subcommand; each defines register(subparsers)."""
