"""Generated from spec/usage-conventions.json by sdk/python/scripts/generate_conventions.py;
do not edit. Whose counting convention each route's usage follows (docs/api-rules.md#cost).
"""

from typing import Dict, Tuple

__all__ = ["CONVENTIONS", "ROUTES"]

#: convention -> (prompt_includes_cached, completion_includes_reasoning)
CONVENTIONS: Dict[str, Tuple[bool, bool]] = {
    "anthropic": (False, True),
    "bedrock": (False, True),
    "google": (True, False),
    "openai": (True, True),
    "xai": (True, False),
}

#: (client, method) -> (provider, convention): the Python SDK's routes
ROUTES: Dict[Tuple[str, str], Tuple[str, str]] = {
    ("OpenAI", "chat.completions.create"): ("openai", "openai"),
    ("OpenAI", "responses.create"): ("openai", "openai"),
    ("OpenAI", "embeddings.create"): ("openai", "openai"),
    ("AzureOpenAI", "chat.completions.create"): ("azure", "openai"),
    ("AzureOpenAI", "responses.create"): ("azure", "openai"),
    ("AzureOpenAI", "embeddings.create"): ("azure", "openai"),
    ("OpenAI provider=xai", "chat.completions.create"): ("xai", "xai"),
    ("OpenAI provider=xai", "responses.create"): ("xai", "openai"),
    ("Anthropic", "messages.create"): ("anthropic", "anthropic"),
    ("Anthropic", "beta.messages.create"): ("anthropic", "anthropic"),
    ("AnthropicVertex", "messages.create"): ("anthropic", "anthropic"),
    ("AnthropicVertex", "beta.messages.create"): ("anthropic", "anthropic"),
    ("AnthropicBedrock", "messages.create"): ("bedrock", "anthropic"),
    ("AnthropicBedrock", "beta.messages.create"): ("bedrock", "anthropic"),
    ("genai.Client", "models.generate_content"): ("google", "google"),
    ("genai.Client", "models.embed_content"): ("google", "google"),
    ("bedrock-runtime", "converse"): ("bedrock", "bedrock"),
    ("bedrock-runtime", "converse_stream"): ("bedrock", "bedrock"),
    ("bedrock-runtime", "invoke_model"): ("bedrock", "bedrock"),
    ("bedrock-runtime", "invoke_model_with_response_stream"): ("bedrock", "bedrock"),
    ("litellm", "completion"): ("*", "openai"),
}
