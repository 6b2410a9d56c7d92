"""The link controller's `tablectl` verb (`link`), loaded by controller.cli.main by module name."""
