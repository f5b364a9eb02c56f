"""Importing the providers' bills, one connection at a time: its admin key, the days due, the
provider's pages (``pages.py``) read by its importer (``openai.py``, ``anthropic.py``,
``bedrock.py``), the catalogue view reconciliation needs, and the gap alerts after an import."""
