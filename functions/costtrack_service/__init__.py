"""costtrack service: ingestion, pricing and plans on AWS Lambda and DynamoDB."""

__version__ = "0.1.0"
