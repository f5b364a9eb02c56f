"""Importing the providers' bills, one connection at a time: its admin key, the days due, the
provider's pages read by its importer (OpenAI's, Anthropic's,
Bedrock's), the catalogue view reconciliation needs, and the gap alerts after an import."""
