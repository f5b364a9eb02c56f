"""The customer portal: its tokens and what it shows a customer (docs/guides/portal.md)."""
