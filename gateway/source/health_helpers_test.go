package source_test

import (
	"encoding/json"
	"net/http"
	"testing"
)

// healthStatus is the data port's /health "status" (ok, degraded, unavailable).
func healthStatus(t *testing.T, base string) string {
	t.Helper()
	resp, err := http.Get(base + "/health")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var h struct {
		Status string `json:"status"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&h); err != nil {
		t.Fatalf("/health: %v", err)
	}
	return h.Status
}
