"""The package version, in a module of its own so that any layer can stamp it into its outputs."""

__version__ = "0.1.0"
