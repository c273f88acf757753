package mockproviders

import (
	"net/http"

	"github.com/llmgw/llmgw/api/wire/anthropic"
)

// countTokensPath is beta's token counting endpoint, which Claude Code
// calls to size its context.
const countTokensPath = "/v1/messages/count_tokens"

// countTokens answers POST /v1/messages/count_tokens with the input tokens
// the same request to /v1/messages would be billed (usage.input_tokens
// without cached_tokens): directive lines are removed first, as there,
// and are not applied — the call generates nothing a fault could cut.
// It is checked as /v1/messages is, less max_tokens.
func (h *handler) countTokens(w http.ResponseWriter, r *http.Request, body []byte, c *callState) {
	req, e := parseBeta(body, false)
	if e != nil {
		h.proto.writeError(w, e)
		return
	}
	c.req = req
	stripLastUser(req)
	writeJSON(w, http.StatusOK, anthropic.CountTokensResponse{InputTokens: inputTokens(req)})
}
