package server

import (
	"context"
	"net/http"

	"github.com/llmgw/llmgw/api/tokens"
	"github.com/llmgw/llmgw/gateway/translate"
)

// completeJSON answers a non-streaming request (chat or embeddings).
// Nothing is written until a route has answered in full, so a fallback is
// invisible to the caller.
func (x *exchange) completeJSON(ctx context.Context) {
	var ans *translate.Answer
	f := x.route(ctx, func(ctx context.Context, c *candidate) (f *failure) {
		ans, f = x.callJSON(ctx, c)
		return f
	})
	x.releaseBodies()
	if f != nil {
		x.answerFailure(f)
		return
	}
	x.answerJSON(ans)
}

// callJSON is one attempt, bounded by the alias's attempt timeout (and by
// the total deadline, through ctx).
func (x *exchange) callJSON(ctx context.Context, c *candidate) (*translate.Answer, *failure) {
	actx, cancel := context.WithTimeoutCause(ctx, ms(x.alias.Timeouts.AttemptMs), errAttemptTimeout)
	defer cancel() // after classify: the cause must still say why the attempt ended
	var ans *translate.Answer
	err := x.st.adapters[c.route.Provider].Complete(actx, c.call(), func(raw []byte) (err error) {
		ans, err = c.answer(raw, &x.meta)
		return err
	})
	if err != nil {
		return nil, x.classify(actx, c.route, err, false)
	}
	return ans, nil
}

func (x *exchange) answerJSON(a *translate.Answer) {
	// The gateway counts the answer itself only when the provider did not.
	u := x.ownCount(tokens.Count(a.Text))
	if a.Usage != nil {
		u = *a.Usage
	}
	x.setUsage(u)
	x.finish = a.FinishReason
	// The final record is durable before the first byte.
	x.finalize(statusSuccess, http.StatusOK)
	h := x.w.Header()
	h["Content-Type"] = jsonType
	h[hdrProvider] = []string{x.rec.Provider}
	x.w.WriteHeader(http.StatusOK)
	_, _ = x.w.Write(a.Body)
}
