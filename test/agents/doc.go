// Package agents runs the real coding agents — Claude Code and Codex, at the
// versions hack/agents/versions.env pins, installed by hack/agents/install.sh
// into bin/agents/ — once each, non-interactively, against llmgw's mock
// providers or the gateway, and checks that a whole tool loop works: the
// model (a mock, scripted by an @mock directive in the prompt) asks for a
// shell command, the agent runs it, sends the result back and gets a final
// answer.
//
// The tests carry the build tag "agents", so `go test ./...` skips them:
//
//	hack/agents/install.sh
//	go test -tags agents -count=1 -v ./test/agents/
//
// LLMGW_AGENTS_TARGET chooses what the agents talk to: "mock" (the default:
// Claude Code straight to mock beta's /v1/messages, Codex to mock alpha's
// /v1/responses, both mocks in the test process) or "gateway" (`llmgw up`
// from LLMGW_BIN, default bin/llmgw: Claude Code to the gateway's
// /v1/messages with alias chat-beta, Codex to its /v1/responses with alias
// chat-alpha, with gateway key A). Each agent runs with HOME in a temporary
// directory, a minimal environment (no credential of the caller's leaks in),
// telemetry, update checks and other non-essential traffic off, and only
// loopback URLs configured.
package agents
