"""Scheduled jobs that read the providers' bills (issue 32): one importer per provider, and
the catalogue view the reconciliation needs."""
