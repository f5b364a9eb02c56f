"""Cost per run and per session (CONTRACT §11): the totals each trace and session
keep as their events arrive (``totals.py``), and the mergeable sketch their costs are counted
in (``sketch.py``). Pure: the store (``store/run_totals.py``) reads and writes them."""
