"""DynamoDB: every read and write of costtrack's tables, one part per table or concern.

``client.TableAccess`` holds the client and the table names; each part (``client.TablePart``)
is given one and is named for what it stores: ``events`` (ingestion's writes), ``prices``,
``budgets``, ``reservations``, ``rollups``, ``pages`` (events by time), ``runs``, ``keys``,
``workspaces``, ``provider_bills``, ``repricing``, ``export_reads``, …. A function's store
composes the parts it uses as attributes: ``dynamo.DynamoStore`` all of them, and
``ingestion.IngestionStore`` ingestion's only, so its cold start imports none of the others.
The domain never imports this package; services state the parts they need as ``Protocol``
classes (docs/concepts/architecture.md).
"""
