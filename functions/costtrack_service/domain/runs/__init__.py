"""Cost per run and per session: totals kept as events arrive and a mergeable cost sketch, so
run reports never read every event (docs/guides/runs.md)."""
