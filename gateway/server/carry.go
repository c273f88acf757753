package server

import (
	"errors"
	"fmt"
	"net/http"

	"github.com/llmgw/llmgw/api/snapshot"
	"github.com/llmgw/llmgw/gateway/provider"
	"github.com/llmgw/llmgw/gateway/translate"
)

// candidate is one of the alias's routes that can carry the request: the
// route, the body its provider gets, and the translator of its answers.
type candidate struct {
	route snapshot.Route
	op    provider.Operation // the provider endpoint the body goes to
	body  [][]byte
	chat  translate.ChatPair      // a chat or messages request's
	embed translate.EmbeddingPair // an embeddings request's
	// header: the caller's headers forwarded to a provider of the caller's
	// own protocol (passThroughHeaders); nil for any other.
	header http.Header
}

// call is the provider call of one attempt.
func (c *candidate) call() provider.Call {
	return provider.Call{Op: c.op, Body: c.body, Header: c.header}
}

// answer reads the provider's JSON answer with the route's translator.
func (c *candidate) answer(raw []byte, m *translate.Meta) (*translate.Answer, error) {
	if c.chat != nil {
		return c.chat.Answer(raw, m)
	}
	return c.embed.Answer(raw, m)
}

// carry translates the request for every route the alias may use, the
// primary first, into x.cands. A route whose provider protocol cannot carry
// it (a parameter without an equivalent; embeddings to a protocol without
// them) is left out, as if it were unavailable; when none is left the
// request is refused, naming what could not be carried and the alias.
func (x *exchange) carry() *apiError {
	a := x.alias
	fallbacks := a.AllowedFallbacks()
	x.cands = make([]candidate, 0, 1+len(fallbacks))
	var refused *translate.NotCarried
	fwd := passThroughHeaders(x.r.Header) // for the routes of the caller's protocol
	for i := -1; i < len(fallbacks); i++ {
		rt := a.Primary
		if i >= 0 {
			rt = fallbacks[i]
		}
		c := candidate{route: rt, op: x.p.op}
		var err error
		protocol := x.st.protocols[rt.Provider]
		switch x.p.op {
		case provider.OpEmbeddings:
			if c.embed = translate.Embeddings(protocol); c.embed == nil {
				return errUnknownProtocol(rt, protocol)
			}
			c.body, err = c.embed.Request(&translate.EmbeddingRequest{Body: x.p.body}, rt.Model)
		default:
			switch x.ing.api {
			case apiAnthropic:
				c.chat = translate.Messages(protocol)
			case apiResponses:
				passThrough := x.st.responsesAPI[rt.Provider]
				c.chat = translate.Responses(protocol, passThrough)
				if passThrough {
					c.op = provider.OpResponses
				}
			default:
				c.chat = translate.Chat(protocol)
			}
			if c.chat == nil {
				return errUnknownProtocol(rt, protocol)
			}
			c.body, err = c.chat.Request(&translate.ChatRequest{Body: x.p.body, Stream: x.p.stream, IncludeUsage: x.p.includeUsage}, rt.Model)
		}
		var nc *translate.NotCarried
		switch {
		case errors.As(err, &nc):
			if refused == nil {
				refused = nc
			}
			continue
		case err != nil:
			x.s.log.Error("a request the gateway validated could not be translated", "request_id", x.rec.RequestID,
				"provider", rt.Provider, "err", err)
			return &apiError{status: http.StatusInternalServerError, typ: typeInternal, code: "internal_error", message: "the request could not be translated for its provider"}
		}
		if protocol == x.ing.api.protocol() {
			c.header = fwd
		}
		x.cands = append(x.cands, c)
	}
	if len(x.cands) > 0 {
		return nil
	}
	msg := fmt.Sprintf("no route of model %q can carry this request: %s", x.p.alias, refused.Reason)
	if refused.Param == "" {
		return errInvalid("unsupported_for_model", "model", msg)
	}
	// The param may hold a name the caller chose (an unknown member).
	param := safeParam(refused.Param)
	return errInvalid("unsupported_parameter", param, param+": "+msg)
}

// passThroughHeaders are the caller's headers a provider of its own
// protocol gets (the provider adapter lets no others through): Anthropic's
// anthropic-version and anthropic-beta, which say what the body means.
// nil when the caller sent none, the common case.
func passThroughHeaders(h http.Header) http.Header {
	var fwd http.Header
	for _, name := range []string{hdrAnthropicVersion, "Anthropic-Beta"} {
		if v := h[name]; len(v) > 0 {
			if fwd == nil {
				fwd = make(http.Header, 2)
			}
			fwd[name] = v
		}
	}
	return fwd
}

func errUnknownProtocol(rt snapshot.Route, protocol string) *apiError {
	return &apiError{status: http.StatusInternalServerError, typ: typeInternal, code: "internal_error",
		message: fmt.Sprintf("provider %s has protocol %q, which this gateway does not speak", rt.Provider, protocol)}
}

// releaseBodies lets go of the request's bodies once no route is tried
// again (the commit point, or the answer): a long prompt would otherwise
// stay for a stream's whole life.
func (x *exchange) releaseBodies() {
	x.releaseBody()
	x.p.body = nil
	for i := range x.cands {
		x.cands[i].body = nil
	}
}
