"""pipediag's version, in a module of its own: the report records it, and the package root
re-exports it, without the session importing the package root (an import cycle)."""

__version__ = "0.1.0"
