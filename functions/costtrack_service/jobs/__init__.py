"""Scheduled work: the price sync, the budget alerts' evaluator and dispatcher, the daily
export, the bill imports and their reconciliation alerts, and the run-cost anomaly evaluator.
Each job is called by a thin handler in ``handlers/`` (or by ``costtrack admin``) and works
through the store; no job imports the edge.
"""
