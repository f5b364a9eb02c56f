"""The rules of accepting events, independent of HTTP and DynamoDB: what an event and a batch
are, how they are written and paid for, what is stored and answered (docs/api-rules.md#event-fields,
docs/concepts/allowance.md)."""
