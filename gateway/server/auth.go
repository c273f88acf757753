package server

import (
	"net/http"
	"strings"

	"github.com/llmgw/llmgw/api/keyformat"
	"github.com/llmgw/llmgw/api/snapshot"
)

// authenticate finds the caller's key: lookup by the non-secret prefix, then
// a constant-time comparison of the whole key's SHA-256 with the stored hash
// of that prefix — the key's own, or during a rotation's grace the key it
// replaced (snapshot.Key.Previous), which authenticates as the same key. It
// returns the hash that matched (the record's fingerprint is of the key
// used) and, for a key that is refused as disabled, expired or rotated, the
// key too (its record is attributed). A refusal is charged to the caller's
// address (checkClientIP). The plaintext never leaves this file
// (presentedKey reads it).
func (s *Server) authenticate(st *state, r *http.Request) (*snapshot.Key, string, *apiError) {
	k, hash, aerr := s.findKey(st, r)
	if aerr != nil {
		s.chargeClientIP(r)
	}
	return k, hash, aerr
}

func (s *Server) findKey(st *state, r *http.Request) (*snapshot.Key, string, *apiError) {
	plain, aerr := presentedKey(r.Header)
	if aerr != nil {
		return nil, "", aerr
	}
	prefix, ok := keyformat.PrefixOf(plain)
	if !ok {
		return nil, "", invalidKey()
	}
	k, ok := st.idx.KeyByPrefix(prefix)
	if !ok {
		return nil, "", invalidKey()
	}
	hash, previous := k.HashFor(prefix)
	if !keyformat.Verify(plain, hash) {
		return nil, "", invalidKey()
	}
	now := s.now()
	if previous && !k.Previous.Accepts(now) {
		return k, hash, &apiError{status: http.StatusUnauthorized, typ: typeAuthentication, code: "key_rotated",
			message: "this gateway key was rotated and its grace period has ended; use the key that replaced it"}
	}
	if k.Disabled {
		return k, hash, &apiError{status: http.StatusUnauthorized, typ: typeAuthentication, code: "key_disabled",
			message: "this gateway key is disabled"}
	}
	if !k.Active(now) {
		return k, hash, &apiError{status: http.StatusUnauthorized, typ: typeAuthentication, code: "key_expired",
			message: "this gateway key has expired"}
	}
	return k, hash, nil
}

// presentedKey is the gateway key the caller sent: in Authorization as a
// Bearer token (the OpenAI SDKs, Claude Code's ANTHROPIC_AUTH_TOKEN) or in
// x-api-key (the Anthropic SDKs, Claude Code's ANTHROPIC_API_KEY). A
// request that sends either header twice, or both with different keys, is
// refused: which one a proxy or the gateway would pick is not the caller's
// to guess.
func presentedKey(h http.Header) (string, *apiError) {
	auths, apiKeys := h[hdrAuthorization], h[hdrAPIKey]
	if len(auths) > 1 || len(apiKeys) > 1 {
		return "", &apiError{status: http.StatusUnauthorized, typ: typeAuthentication, code: "multiple_authorization_headers",
			message: "more than one Authorization or x-api-key header; send the gateway key once"}
	}
	var bearer, apiKey string
	if len(auths) == 1 {
		scheme, plain, ok := strings.Cut(auths[0], " ")
		plain = strings.TrimSpace(plain)
		if !ok || !strings.EqualFold(scheme, "Bearer") || plain == "" {
			return "", &apiError{status: http.StatusUnauthorized, typ: typeAuthentication, code: "invalid_api_key",
				message: "malformed Authorization header; send 'Authorization: Bearer <gateway key>'"}
		}
		bearer = plain
	}
	if len(apiKeys) == 1 {
		if apiKey = strings.TrimSpace(apiKeys[0]); apiKey == "" {
			return "", &apiError{status: http.StatusUnauthorized, typ: typeAuthentication, code: "invalid_api_key",
				message: "empty x-api-key header; send 'x-api-key: <gateway key>'"}
		}
	}
	switch {
	case bearer != "" && apiKey != "" && bearer != apiKey:
		return "", &apiError{status: http.StatusUnauthorized, typ: typeAuthentication, code: "multiple_authorization_headers",
			message: "the Authorization and x-api-key headers carry different keys; send the gateway key once"}
	case bearer != "":
		return bearer, nil
	case apiKey != "":
		return apiKey, nil
	}
	return "", &apiError{status: http.StatusUnauthorized, typ: typeAuthentication, code: "missing_api_key",
		message: "missing gateway key; send 'Authorization: Bearer <gateway key>' or 'x-api-key: <gateway key>'"}
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
