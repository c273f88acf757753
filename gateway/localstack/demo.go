package localstack

import (
	"github.com/llmgw/llmgw/api/keyformat"
	"github.com/llmgw/llmgw/api/snapshot"
)

// Demo is the local stack's configuration: aliases chat-alpha and chat-beta
// (each falling back to the other provider once) and chat-restricted (no
// fallback); key A may use all three, key B the first two, both at 60 rpm.
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
		},
		Keys: []snapshot.Key{
			key("key-a", keyA, []string{"chat-alpha", "chat-beta", "chat-restricted"}),
			key("key-b", keyB, []string{"chat-alpha", "chat-beta"}),
		},
	}
}

// ForBenchmarks edits the demo for benchmarks: alias model routes to mock
// alpha's model of the same name without fallback, so a request body is
// byte-for-byte the same sent to the mock or through the gateway, and every
// key's limiter is out of reach (~1.7M requests/s sustained, 1M burst).
func ForBenchmarks(model string) func(*snapshot.Snapshot) {
	return func(s *snapshot.Snapshot) {
		zero := 0
		s.Aliases = append(s.Aliases, snapshot.Alias{Name: model,
			Primary: snapshot.Route{Provider: "alpha", Model: model}, MaxFallbacks: &zero})
		for i := range s.Keys {
			s.Keys[i].Models = append(s.Keys[i].Models, model)
			s.Keys[i].RateLimit = snapshot.RateLimit{RPM: 100_000_000, Burst: 1_000_000}
		}
	}
}
