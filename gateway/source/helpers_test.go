package source

import "github.com/llmgw/llmgw/api/snapshot"

// validSnapshot is a small valid configuration; tests mutate copies of it.
func validSnapshot() *snapshot.Snapshot {
	s := &snapshot.Snapshot{
		Providers: []snapshot.Provider{{Name: "alpha", Protocol: snapshot.ProtocolOpenAI, BaseURL: "http://127.0.0.1:9001"}},
		Aliases:   []snapshot.Alias{{Name: "chat-alpha", Primary: snapshot.Route{Provider: "alpha", Model: "alpha-large"}}},
		Keys: []snapshot.Key{{ID: "key-a", Prefix: "lgw_keyaaaaaaa",
			Hash: "sha256:1182f96fbcb6f5113c26c1ba36783f43a446dc772e4e8e066cdc2325beee24eb", Models: []string{"*"}}},
	}
	s.Normalize()
	return s
}
