"""The local stack: DynamoDB Local, the HTTP front and demo data (``costtrack dev``)."""
