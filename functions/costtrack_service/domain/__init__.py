"""The rules of costtrack, in plain Python: no AWS, no HTTP. The store and the edge call in here."""
