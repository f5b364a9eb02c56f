"""Spend control before the call (CONTRACT §10): reservations against enforced budgets.

``request`` reads ``POST /v1/reservations``; ``scope`` finds the enforced budget instances a
call falls under; ``ledger`` keeps each instance's money in leased shards (the allowance's
design); ``service`` reserves and releases; ``settle`` settles a reservation with its event.
"""
