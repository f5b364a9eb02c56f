"""The owners' use cases, behind the ``/v1/workspace/...`` routes and ``costtrack admin``:
a workspace's plan, reports, events and statements (``workspace.py``), budgets and webhook
endpoints (``budgets.py``), price overrides (``overrides.py``), reconciliation with the
provider's bill (``reconciliation.py``), and the request bodies they take (``requests.py``).

A service applies the domain's rules to what the store reads and writes; it imports the domain
and states what it needs from the store as a ``Protocol``, never DynamoDB or HTTP.
"""
