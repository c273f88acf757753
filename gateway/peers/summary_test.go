package peers

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/llmgw/llmgw/gateway/usage"
)

func TestSummaryAsksEverySibling(t *testing.T) {
	from := time.Date(2026, 5, 1, 0, 0, 0, 0, time.FixedZone("x", 7200))
	to := from.Add(24 * time.Hour)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		if r.URL.Path != Path || !Authorized(r, "tok") || q.Get("view") != SummaryView || q.Get("key_id") != "key-a" ||
			q.Get("from") != "2026-04-30T22:00:00Z" || q.Get("to") != "2026-05-01T22:00:00Z" {
			http.Error(w, "bad query "+r.URL.RawQuery, http.StatusBadRequest)
			return
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"requests": 2})
	}))
	defer srv.Close()
	client := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
		if addr == "gw-0.peers:9090" {
			addr = strings.TrimPrefix(srv.URL, "http://")
		} else {
			addr = "127.0.0.1:1"
		}
		return (&net.Dialer{}).DialContext(ctx, network, addr)
	}}}
	s, err := New(Config{Self: "gw-1", Service: "peers", Replicas: 3, Port: 9090, Token: "tok", Client: client})
	if err != nil {
		t.Fatal(err)
	}
	pages, missing := s.Summary(context.Background(), "key-a", usage.Filter{}, "", from, to)
	if len(pages) != 1 || pages[0].Replica != "gw-0" || strings.TrimSpace(string(pages[0].Body)) != `{"requests":2}` {
		t.Fatalf("pages %+v", pages)
	}
	if len(missing) != 1 || missing[0] != "gw-2" {
		t.Fatalf("missing %v", missing)
	}
}
