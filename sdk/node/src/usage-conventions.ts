// Generated from spec/usage-conventions.json by scripts/generate-conventions.mjs; do not edit.
// Whose counting convention each route's usage follows (docs/api-rules.md#cost).

/** convention → [prompt_includes_cached, completion_includes_reasoning] */
export const CONVENTIONS: Readonly<Record<string, readonly [boolean, boolean]>> = {
  "anthropic": [false, true],
  "bedrock": [false, true],
  "google": [true, false],
  "openai": [true, true],
  "xai": [true, false],
};

/** `client method` → [provider, convention]: the Node SDK's routes */
export const ROUTES: Readonly<Record<string, readonly [string, string]>> = {
  "OpenAI chat.completions.create": ["openai", "openai"],
  "OpenAI responses.create": ["openai", "openai"],
  "OpenAI embeddings.create": ["openai", "openai"],
  "AzureOpenAI chat.completions.create": ["azure", "openai"],
  "AzureOpenAI responses.create": ["azure", "openai"],
  "AzureOpenAI embeddings.create": ["azure", "openai"],
  "OpenAI provider=xai chat.completions.create": ["xai", "xai"],
  "OpenAI provider=xai responses.create": ["xai", "openai"],
  "Anthropic messages.create": ["anthropic", "anthropic"],
  "Anthropic beta.messages.create": ["anthropic", "anthropic"],
  "AnthropicVertex messages.create": ["anthropic", "anthropic"],
  "AnthropicVertex beta.messages.create": ["anthropic", "anthropic"],
  "AnthropicBedrock messages.create": ["bedrock", "anthropic"],
  "AnthropicBedrock beta.messages.create": ["bedrock", "anthropic"],
  "GoogleGenAI models.generateContent": ["google", "google"],
  "GoogleGenAI models.embedContent": ["google", "google"],
  "GoogleGenAI models.generateContentStream": ["google", "google"],
  "BedrockRuntimeClient ConverseCommand": ["bedrock", "bedrock"],
  "BedrockRuntimeClient ConverseStreamCommand": ["bedrock", "bedrock"],
  "BedrockRuntimeClient InvokeModelCommand": ["bedrock", "bedrock"],
  "BedrockRuntimeClient InvokeModelWithResponseStreamCommand": ["bedrock", "bedrock"],
};
