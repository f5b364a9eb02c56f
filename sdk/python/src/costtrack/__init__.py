"""costtrack: exact cost tracking for language-model calls."""

from costtrack._version import __version__
from costtrack.validation import EventValidationError, FieldError, validate_event

__all__ = ["EventValidationError", "FieldError", "__version__", "validate_event"]
