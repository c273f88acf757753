package localstack

import (
	"github.com/llmgw/llmgw/api/keyformat"
	"github.com/llmgw/llmgw/api/snapshot"
)

// Demo is the local stack's configuration: aliases chat-alpha and chat-beta
// (each falling back to the other provider once), chat-restricted (no
// fallback) and embed-alpha (embeddings, alpha only); key A may use all
// four, key B all but chat-restricted, both at 60 rpm.
func Demo(alphaURL, betaURL, keyA, keyB string) *snapshot.Snapshot {
	zero, one := 0, 1
	key := func(id, plain string, models []string) snapshot.Key {
		prefix, _ := keyformat.PrefixOf(plain)
		return snapshot.Key{ID: id, Prefix: prefix, Hash: keyformat.Hash(plain), Models: models,
			RateLimit: snapshot.RateLimit{RPM: 60, Burst: 10}}
	}
	return &snapshot.Snapshot{
		Providers: []snapshot.Provider{
			{Name: "alpha", Protocol: snapshot.ProtocolOpenAI, BaseURL: alphaURL},
			{Name: "beta", Protocol: snapshot.ProtocolAnthropic, BaseURL: betaURL, Credential: &snapshot.Credential{File: betaKeyFile}},
		},
		Aliases: []snapshot.Alias{
			{Name: "chat-alpha", Primary: snapshot.Route{Provider: "alpha", Model: "alpha-large"},
				Fallbacks: []snapshot.Route{{Provider: "beta", Model: "beta-large"}}, MaxFallbacks: &one},
			{Name: "chat-beta", Primary: snapshot.Route{Provider: "beta", Model: "beta-large"},
				Fallbacks: []snapshot.Route{{Provider: "alpha", Model: "alpha-large"}}, MaxFallbacks: &one},
			{Name: "chat-restricted", Primary: snapshot.Route{Provider: "alpha", Model: "alpha-small"}, MaxFallbacks: &zero},
			{Name: "embed-alpha", Primary: snapshot.Route{Provider: "alpha", Model: "alpha-embed"}, MaxFallbacks: &zero},
		},
		Keys: []snapshot.Key{
			key("key-a", keyA, []string{"chat-alpha", "chat-beta", "chat-restricted", "embed-alpha"}),
			key("key-b", keyB, []string{"chat-alpha", "chat-beta", "embed-alpha"}),
		},
	}
}
