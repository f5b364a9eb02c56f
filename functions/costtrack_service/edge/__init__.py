"""The HTTP edge: Powertools resolvers that turn API Gateway events into domain calls."""
