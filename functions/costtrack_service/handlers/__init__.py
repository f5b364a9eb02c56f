"""Lambda entry points, one module per function. Each is a line or two: the work is in
``edge`` (HTTP), ``domain`` (rules) and ``store`` (DynamoDB)."""
