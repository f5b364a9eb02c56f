"""Helpers shared by test modules (never imported from another test module)."""
