// Package mockproviders implements `llmgw mockprovider`: two mock model vendors with
// different wire protocols (alpha: OpenAI chat-completions; beta: Anthropic-Messages
// style) whose answers are deterministic, whose token counts follow api/tokens
// exactly, and whose faults are requested per provider by an "@mock" line in the last
// user message, so gateway tests can script fallbacks without randomness.
// docs/MOCKPROVIDERS.md is the user-facing reference.
package mockproviders
