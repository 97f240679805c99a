"""Subcommands of `omni`; each module defines register(subparsers) and sets func via set_defaults."""
