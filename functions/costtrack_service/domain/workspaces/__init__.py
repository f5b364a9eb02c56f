"""A workspace: its plan and the allowance decision (``plans.py``), its ingestion keys
(``keys.py``), the allowance held in leases on shards (``allowance.py``) and where its writes
land (``shards.py``)."""
