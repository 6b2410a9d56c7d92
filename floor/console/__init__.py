"""The floor console: every table live in a browser, served by `tablectl floor` (docs/console.md)."""
