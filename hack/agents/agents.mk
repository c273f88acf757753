# The real coding agents (hack/agents/install.sh installs the versions pinned
# in hack/agents/versions.env from npm into bin/agents/), each run once
# through a tool loop: first straight against the mocks (the mocks speak what
# the agents send), then through `llmgw up` (bin/llmgw: /v1/messages and
# /v1/responses, passed through and translated, one record per model call).
.PHONY: test-agents
test-agents: build ## Claude Code and Codex (pinned, from npm) through a tool loop: against the mocks, then through llmgw up
	hack/agents/install.sh
	LLMGW_AGENTS_TARGET=mock $(GO) test -tags agents -count=1 -v ./test/agents/
	LLMGW_AGENTS_TARGET=gateway LLMGW_BIN=$(BIN)/llmgw $(GO) test -tags agents -count=1 -v ./test/agents/
