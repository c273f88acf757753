package server_test

import (
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/llmgw/llmgw/api/snapshot"
	"github.com/llmgw/llmgw/gateway/quota"
	"github.com/llmgw/llmgw/test/testutil"
)

// Every answer to an authenticated request says where the key's limits
// stand after it, per header, with the memory store and with a real
// redis-server shared by two replicas (the second replica sees what the
// first took).
func TestLimitHeaders(t *testing.T) {
	upstream := fixedUpstream(t)
	redisSrv := testutil.StartRedis(t, "")
	for _, store := range []string{"memory", "redis"} {
		t.Run(store, func(t *testing.T) {
			keys := spendKeys{a: newKeyPair(t), b: newKeyPair(t)}
			snap := spendSnapshot(upstream, keys, "1", func(s *snapshot.Snapshot) {
				k := &s.Keys[0]
				k.RateLimit = snapshot.RateLimit{RPM: 60, Burst: 4}
				k.TokensPerMinute = 1000
				k.Budget = budget(3, snapshot.PeriodDay)
				k.Group = "g"
				s.Groups = []snapshot.Group{{Name: "g", TokensPerMinute: 500}}
			})
			newStore := func() quota.Store {
				if store == "memory" {
					return nil
				}
				r, err := quota.NewRedis(quota.RedisOptions{URL: redisSrv.URL(), Password: redisSrv.Password, Prefix: "hdr:"})
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { _ = r.Close() })
				return r
			}
			dir := t.TempDir()
			first := startReplica(t, filepath.Join(dir, "a.db"), newStore(), snap)
			second := first
			if store == "redis" {
				second = startReplica(t, filepath.Join(dir, "b.db"), newStore(), snap)
			}
			// Input tokens are the gateway's count of the prompt; reserved is
			// that plus max_tokens (10); each answer uses 3+10 (fixedUpstream).
			want := []struct {
				via              *replica
				stream           bool
				status           int
				requests, tokens string
				budget           string
			}{
				{first, false, http.StatusOK, "3", "", units(2)},
				{second, true, http.StatusOK, "2", "", units(1)},
				{first, false, http.StatusOK, "1", "", units(0)},
				{second, false, http.StatusTooManyRequests, "0", "", units(0)}, // the budget is spent
			}
			for i, w := range want {
				status, h, _ := w.via.post(t, keys.a.plain, "chat", w.stream)
				if status != w.status {
					t.Fatalf("request %d: status %d, want %d", i, status, w.status)
				}
				check := func(name, want string) {
					t.Helper()
					if got := h.Get(name); got != want {
						t.Errorf("request %d: %s = %q, want %q", i, name, got, want)
					}
				}
				check("X-Ratelimit-Limit-Requests", "4")
				check("X-Ratelimit-Remaining-Requests", w.requests)
				check("X-Ratelimit-Limit-Tokens", "500") // the group's, tighter than the key's 1000
				check("X-Llmgw-Budget-Remaining", strings.TrimRight(strings.TrimRight(w.budget, "0"), "."))
				if r, err := time.ParseDuration(h.Get("X-Ratelimit-Reset-Requests")); err != nil || r <= 0 || r > 4*time.Second {
					t.Errorf("request %d: reset-requests %q", i, h.Get("X-Ratelimit-Reset-Requests"))
				}
				if r, err := time.ParseDuration(h.Get("X-Llmgw-Budget-Reset")); err != nil || r <= 0 || r > 24*time.Hour {
					t.Errorf("request %d: budget reset %q", i, h.Get("X-Llmgw-Budget-Reset"))
				}
				tokens, err := strconv.Atoi(h.Get("X-Ratelimit-Remaining-Tokens"))
				if err != nil || tokens < 0 || tokens >= 500 {
					t.Errorf("request %d: remaining tokens %q", i, h.Get("X-Ratelimit-Remaining-Tokens"))
				}
				if status == http.StatusTooManyRequests && h.Get("Retry-After") == "" {
					t.Errorf("request %d: 429 without Retry-After", i)
				}
			}
		})
	}
}
