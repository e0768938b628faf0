//! The LLM client: Anthropic Messages and OpenAI-compatible chat completions over reqwest.
