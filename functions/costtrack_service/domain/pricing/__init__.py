"""Pricing a call: the catalogue's entries (``entries.py``), which model a name means
(``match.py``), which entry is in force (``pricebook.py``), the exact cost (``cost.py``), one
event priced (``pricer.py``), a workspace's overrides (``overrides.py``), what a sync would
change (``sync.py``) and a cost the provider reported itself (``reported.py``)."""
