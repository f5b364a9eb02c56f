"""costtrack's development and operator tools, never deployed: the ``costtrack`` command
(``cli.py``), ``costtrack admin`` (``admin*.py``), the local stack (``local/``) and the in-memory
store the tests use (``memory_store.py``). SAM builds the functions from ``functions/`` only."""
