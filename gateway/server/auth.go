package server

import (
	"net/http"
	"strings"

	"github.com/llmgw/llmgw/api/keyformat"
	"github.com/llmgw/llmgw/api/snapshot"
)

// authenticate finds the caller's key: lookup by the non-secret prefix, then
// a constant-time comparison of the whole key's SHA-256 with the stored hash.
// The plaintext never leaves this function.
func (s *Server) authenticate(st *state, r *http.Request) (*snapshot.Key, *apiError) {
	if len(r.Header[hdrAuthorization]) > 1 {
		// Which one a proxy or the gateway would pick is not the caller's
		// to guess: refuse rather than let the first win.
		return nil, &apiError{status: http.StatusUnauthorized, typ: typeAuthentication, code: "multiple_authorization_headers",
			message: "more than one Authorization header; send exactly one 'Authorization: Bearer <gateway key>'"}
	}
	h := header(r.Header, hdrAuthorization)
	if h == "" {
		return nil, &apiError{status: http.StatusUnauthorized, typ: typeAuthentication, code: "missing_api_key",
			message: "missing Authorization header; send 'Authorization: Bearer <gateway key>'"}
	}
	scheme, plain, ok := strings.Cut(h, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") || plain == "" {
		return nil, &apiError{status: http.StatusUnauthorized, typ: typeAuthentication, code: "invalid_api_key",
			message: "malformed Authorization header; send 'Authorization: Bearer <gateway key>'"}
	}
	prefix, ok := keyformat.PrefixOf(strings.TrimSpace(plain))
	if !ok {
		return nil, invalidKey()
	}
	k, ok := st.idx.KeyByPrefix(prefix)
	if !ok || !keyformat.Verify(strings.TrimSpace(plain), k.Hash) {
		return nil, invalidKey()
	}
	if k.Disabled {
		return nil, &apiError{status: http.StatusUnauthorized, typ: typeAuthentication, code: "key_disabled",
			message: "this gateway key is disabled"}
	}
	if !k.Active(s.now()) {
		return nil, &apiError{status: http.StatusUnauthorized, typ: typeAuthentication, code: "key_expired",
			message: "this gateway key has expired"}
	}
	return k, nil
}

// invalidKey is built only when a key is refused: building it up front cost
// every request an allocation.
func invalidKey() *apiError {
	return &apiError{status: http.StatusUnauthorized, typ: typeAuthentication, code: "invalid_api_key",
		message: "invalid gateway key"}
}

// authorizeModel applies the key's alias list before looking the alias up, so
// a key learns nothing about aliases it may not use: they are all 403.
func authorizeModel(st *state, k *snapshot.Key, alias string) (*snapshot.Alias, *apiError) {
	if !k.Allows(alias) {
		return nil, &apiError{status: http.StatusForbidden, typ: typePermission, code: "model_not_allowed",
			param: "model", message: "this key may not use the requested model"}
	}
	a, ok := st.idx.Alias(alias)
	if !ok {
		return nil, &apiError{status: http.StatusNotFound, typ: typeInvalidRequest, code: "model_not_found",
			param: "model", message: "the requested model does not exist; GET /v1/models lists the models this key may use"}
	}
	return a, nil
}
