"""The floor's `tablectl` verbs (`floor`, `report`), loaded by controller.cli.main by module name."""
