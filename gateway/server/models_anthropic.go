package server

import (
	"net/http"
	"sort"
	"time"

	"github.com/llmgw/llmgw/api/snapshot"
)

// anthropicModelJSON is a model in Anthropic's list format (GET /v1/models
// to an Anthropic client): Claude Code discovers the aliases with it.
type anthropicModelJSON struct {
	Type        string `json:"type"` // "model"
	ID          string `json:"id"`
	DisplayName string `json:"display_name"`
	CreatedAt   string `json:"created_at"` // RFC 3339
}

type anthropicListJSON struct {
	Data    []anthropicModelJSON `json:"data"`
	HasMore bool                 `json:"has_more"`
	FirstID *string              `json:"first_id"`
	LastID  *string              `json:"last_id"`
}

// allowedAliases are the aliases k may use, sorted by name.
func allowedAliases(st *state, k *snapshot.Key) []string {
	var names []string
	for _, a := range st.snap.Aliases {
		if k.Allows(a.Name) {
			names = append(names, a.Name)
		}
	}
	sort.Strings(names)
	return names
}

// writeAnthropicModels lists the aliases k may use in Anthropic's format,
// all on one page (an alias list is short; the caller's paging parameters
// are accepted and have nothing to page).
func writeAnthropicModels(w http.ResponseWriter, st *state, k *snapshot.Key) {
	created := st.loadedAt.UTC().Format(time.RFC3339)
	out := anthropicListJSON{Data: []anthropicModelJSON{}}
	for _, name := range allowedAliases(st, k) {
		out.Data = append(out.Data, anthropicModelJSON{Type: "model", ID: name, DisplayName: name, CreatedAt: created})
	}
	if n := len(out.Data); n > 0 {
		out.FirstID, out.LastID = &out.Data[0].ID, &out.Data[n-1].ID
	}
	writeJSON(w, http.StatusOK, out)
}

// handleModel serves GET /v1/models/{model}: one alias the key may use, in
// the caller's API's format; 404 for any other name, whether it exists or
// not (a key learns nothing about aliases it may not use).
func (s *Server) handleModel(w http.ResponseWriter, r *http.Request) {
	api := apiOf(r)
	st, k, ok := s.admitRead(w, r, api)
	if !ok {
		return
	}
	name := r.PathValue("model")
	if _, exists := st.idx.Alias(name); !exists || !k.Allows(name) {
		api.writeError(w, &apiError{status: http.StatusNotFound, typ: typeInvalidRequest, code: "model_not_found",
			param: "model", message: "no such model; GET /v1/models lists the models this key may use"}, requestID(w))
		return
	}
	if api == apiAnthropic {
		writeJSON(w, http.StatusOK, anthropicModelJSON{Type: "model", ID: name, DisplayName: name,
			CreatedAt: st.loadedAt.UTC().Format(time.RFC3339)})
		return
	}
	writeJSON(w, http.StatusOK, modelJSON{ID: name, Object: "model", Created: st.loadedAt.Unix(), OwnedBy: "llmgw"})
}
