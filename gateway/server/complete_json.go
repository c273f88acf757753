package server

import (
	"context"
	"net/http"

	"github.com/llmgw/llmgw/api/snapshot"
	"github.com/llmgw/llmgw/api/tokens"
	"github.com/llmgw/llmgw/gateway/provider"
)

// completeJSON answers a non-streaming request. Nothing is written until a
// route has answered in full, so a fallback is invisible to the caller.
func (x *exchange) completeJSON(ctx context.Context) {
	var comp *provider.Completion
	f := x.route(ctx, func(ctx context.Context, rt snapshot.Route) (f *failure) {
		comp, f = x.callJSON(ctx, rt)
		return f
	})
	if f != nil {
		x.answerFailure(f)
		return
	}
	x.answerJSON(comp)
}

// callJSON is one attempt, bounded by the alias's attempt timeout (and by
// the total deadline, through ctx).
func (x *exchange) callJSON(ctx context.Context, rt snapshot.Route) (*provider.Completion, *failure) {
	actx, cancel := context.WithTimeoutCause(ctx, ms(x.alias.Timeouts.AttemptMs), errAttemptTimeout)
	defer cancel() // after classify: the cause must still say why the attempt ended
	req := x.p.req
	req.Model = rt.Model
	comp, err := x.st.adapters[rt.Provider].Complete(actx, &req)
	if err != nil {
		return nil, x.classify(actx, rt, err, false)
	}
	return comp, nil
}

func (x *exchange) answerJSON(c *provider.Completion) {
	// The gateway counts the answer itself only when the provider did not:
	// the count is linear in the answer, and with the provider's usage it was
	// thrown away (≈ 0.6 % of a JSON request's CPU for a one-sentence answer).
	u := c.Usage
	if !c.HasUsage {
		u = x.ownCount(tokens.Count(c.Text))
	}
	x.setUsage(u)
	body := encodeCompletion(x.rec.RequestID, x.start.Unix(), x.p.alias, c.Text, finishReason(c.FinishReason), usageOf(&x.rec))
	// The final record is durable before the first byte.
	x.finalize(statusSuccess, http.StatusOK)
	h := x.w.Header()
	h["Content-Type"] = jsonType
	h[hdrProvider] = []string{x.rec.Provider}
	x.w.WriteHeader(http.StatusOK)
	_, _ = x.w.Write(body)
}
