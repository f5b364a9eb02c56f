"""DynamoDB: every read and write of costtrack's tables, one module per thing stored.

``client.py`` makes the botocore client and translates its errors; ``items.py`` is the one item
codec (records to attribute values and back); ``tables.py`` names and defines the tables.
Each other module is one part (a class over ``client.TableAccess``) named for what it stores;
``dynamo.DynamoStore`` composes them all for the API, the jobs and ``costtrack admin``, and
``ingestion.IngestionStore`` only the parts the ingestion function uses, so that its cold start
imports none of the others. The domain never imports this package; it states what it needs as
``Protocol`` classes and the parts here satisfy them.
"""
