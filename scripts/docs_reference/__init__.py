"""The documentation site's reference pages, generated from the code when `make docs` builds the
site (``scripts/docs_hooks.py`` adds them; none is committed): the HTTP API from the served
OpenAPI document, the CLI from its argparse parser, the SDKs from their docstrings and TSDoc,
the prices from the bundled catalogue."""
