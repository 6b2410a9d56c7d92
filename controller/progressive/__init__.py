"""Progressive meters: the pure meter model, the chapters' parameters and the persisted form (docs/progressive.md)."""
