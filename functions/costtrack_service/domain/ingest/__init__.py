"""Accepting events, independent of HTTP and DynamoDB: a request's events (``events.py``,
``batch.py``, ``jsonlimits.py``, ``source.py``), the decision (``service.py``), its cached reads
(``reads.py``, ``settings.py``), the transactions it writes (``chunks.py``, ``commit.py``), what
is stored and answered (``records.py``, ``visibility.py``) and the events by time
(``time_pages.py``)."""
