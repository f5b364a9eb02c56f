"""Pricing a call exactly: which model a name means, which entry is in force, the cost, and a
workspace's overrides (docs/concepts/pricing.md)."""
