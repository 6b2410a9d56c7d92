"""Shift, gaming-day and period reports from the archive: figures, expectations, renderings."""
