package localstack

import (
	"github.com/llmgw/llmgw/api/keyformat"
	"github.com/llmgw/llmgw/api/snapshot"
)

// Demo is the local stack's configuration: aliases chat-alpha and chat-beta
// (each falling back to the other provider once), chat-restricted (no
// fallback) and embed-alpha (embeddings, alpha only); key A may use all
// four, key B all but chat-restricted, both at 60 rpm. alpha-large,
// beta-large and alpha-embed have the prices of config/samples (USD per
// million tokens), so their records carry a cost; alpha-small is unpriced.
func Demo(alphaURL, betaURL, keyA, keyB string) *snapshot.Snapshot {
	zero, one := 0, 1
	key := func(id, plain string, models []string) snapshot.Key {
		prefix, _ := keyformat.PrefixOf(plain)
		return snapshot.Key{ID: id, Prefix: prefix, Hash: keyformat.Hash(plain), Models: models,
			RateLimit: snapshot.RateLimit{RPM: 60, Burst: 10}}
	}
	return &snapshot.Snapshot{
		Providers: []snapshot.Provider{
			{Name: "alpha", Protocol: snapshot.ProtocolOpenAI, BaseURL: alphaURL, ResponsesAPI: true, Prices: []snapshot.Price{
				{Model: "alpha-large", InputPerMillion: "2.5", CachedInputPerMillion: "1.25", OutputPerMillion: "10"},
				{Model: "alpha-embed", InputPerMillion: "0.02", OutputPerMillion: "0"}}},
			{Name: "beta", Protocol: snapshot.ProtocolAnthropic, BaseURL: betaURL, Credential: &snapshot.Credential{File: betaKeyFile},
				Prices: []snapshot.Price{{Model: "beta-large", InputPerMillion: "3", CachedInputPerMillion: "0.3", OutputPerMillion: "15"}}},
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
