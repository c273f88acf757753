package snapshot

import (
	"strings"
	"testing"
	"time"
)

const (
	plainA = "lgw_keyaaaaaaa_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"
	hashA  = "sha256:1182f96fbcb6f5113c26c1ba36783f43a446dc772e4e8e066cdc2325beee24eb"
	plainB = "lgw_keybbbbbbb_BBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBB"
	hashB  = "sha256:a9cf7e1e05f701c8becfa0ab3e0f5b8d66117d728d4fc6de943e6603ea0700f9"
)

func intp(n int) *int { return &n }

// validSnapshot is the demo configuration of `llmgw up`, normalized; tests mutate
// copies of it.
func validSnapshot() *Snapshot {
	exp := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	s := &Snapshot{
		Providers: []Provider{
			{Name: "alpha", Protocol: ProtocolOpenAI, BaseURL: "http://127.0.0.1:9001"},
			{Name: "beta", Protocol: ProtocolAnthropic, BaseURL: "http://127.0.0.1:9002/v1",
				Credential: &Credential{File: "state/beta-key"}},
		},
		Aliases: []Alias{
			{Name: "chat-alpha", Primary: Route{"alpha", "alpha-large"}, Fallbacks: []Route{{"beta", "beta-large"}}},
			{Name: "chat-beta", Primary: Route{"beta", "beta-large"}, Fallbacks: []Route{{"alpha", "alpha-large"}}},
			{Name: "chat-restricted", Primary: Route{"alpha", "alpha-small"}},
		},
		Keys: []Key{
			{ID: "key-a", Prefix: "lgw_keyaaaaaaa", Hash: hashA, Models: []string{"*"}},
			{ID: "key-b", Prefix: "lgw_keybbbbbbb", Hash: hashB, Models: []string{"chat-alpha", "chat-beta"}, ExpiresAt: &exp},
		},
	}
	s.Normalize()
	return s
}

// mustContainAll fails unless err mentions every want; it also checks that no
// message ever carries a plaintext key.
func mustContainAll(t *testing.T, err error, want ...string) {
	t.Helper()
	if err == nil {
		t.Fatalf("no error; want one mentioning %q", want)
	}
	msg := err.Error()
	for _, w := range want {
		if !strings.Contains(msg, w) {
			t.Errorf("error %q does not mention %q", msg, w)
		}
	}
	for _, p := range []string{plainA, plainB} {
		if strings.Contains(msg, p) {
			t.Errorf("error leaks a plaintext key: %q", msg)
		}
	}
}
