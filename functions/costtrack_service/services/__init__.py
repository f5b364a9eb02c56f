"""The use cases, the one home of what the API and ``costtrack admin`` can do: accepting events
and reservations; the owners' workspace, budgets,
price overrides, reconciliation, drift overrides, runs and run anomalies; and the owners'
request bodies as types.

A service applies the domain's rules to what the store reads and writes; it imports the domain
and states what it needs from the store as a ``Protocol``, never DynamoDB or HTTP.
"""
