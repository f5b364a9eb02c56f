"""A simulation of AWS at scale in virtual time, driving the real ingestion code.

``clock.Hub`` runs many simulated Lambda functions and SDK senders as greenlets on one virtual
clock; ``dynamo.SimDynamo`` is the in-memory store (``memory_store.MemoryStore``: the same
conditions as the DynamoDB transactions) behind the rules of the AWS front
(``local/aws_front.py``) plus on-demand table capacity; ``workload.simulate`` sends one
workspace's events in SDK batches at a chosen rate through ``edge.ingest.ingest_request.ingest`` and
``IngestService`` (planning, leases, the atomic survey, conflict retries) and reports what AWS
would have done. Virtual time costs only the CPU of the domain code: 10,000 events/s for a
virtual minute takes about a minute of one core.
"""
