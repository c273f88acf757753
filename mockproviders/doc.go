// Package mockproviders implements `llmgw mockprovider`: two mock model vendors with
// different wire protocols (alpha: OpenAI chat-completions, plus the Responses
// protocol Codex speaks and embeddings; beta: Anthropic-Messages style, plus token
// counting, as Claude Code uses it) whose answers are deterministic, whose token
// counts follow api/tokens exactly, and whose faults and tool calls are requested per
// provider by an "@mock" line in the last user turn, so gateway tests can script
// fallbacks and agent loops without randomness — with the real agents too
// (test/agents).
// docs/MOCKPROVIDERS.md is the user-facing reference.
package mockproviders
