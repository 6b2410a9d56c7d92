"""tablectl: the table controller daemon and its pure round engine."""

__version__ = "0.1.0"
