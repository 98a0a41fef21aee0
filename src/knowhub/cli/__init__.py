"""Typer command-line face: ``knowhub serve | tree | knowledge | context | admin``."""
