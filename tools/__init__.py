"""Repository tools run by dev.py (not shipped with tablectl)."""
