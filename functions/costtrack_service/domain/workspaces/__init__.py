"""A workspace: its plan and the allowance decision, its ingestion keys, the allowance held in leases on shards
(docs/concepts/allowance.md) and where its writes land (:class:`PartitionLayout`)."""
