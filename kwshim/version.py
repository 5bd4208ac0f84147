"""The version of kwshim, one place for the package and its tools."""

__version__ = "0.2.0.dev0"
