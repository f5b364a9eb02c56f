"""Prepaid credits: grants, their ledger and the low-credit alerts (docs/guides/billing.md#credits)."""
