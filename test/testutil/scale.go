package testutil

import (
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/llmgw/llmgw/api/keyformat"
	"github.com/llmgw/llmgw/api/snapshot"
)

// ScaleSnapshot is a deterministic, realistic snapshot for the scale
// benchmarks: 20 providers with Secret credentials, `aliases` aliases (a
// primary and one fallback each) and `keys` keys shaped like `llmgw keys
// create` makes them: random 10-character ids in the prefix, SHA-256 hashes
// of random 40-character secrets (which compress poorly; that is the point),
// a quarter allowed every alias and the rest one to three, a tenth expiring,
// one in fifty disabled, varied rate limits. It is normalized, not sealed.
func ScaleSnapshot(keys, aliases int) *snapshot.Snapshot {
	r := rand.New(rand.NewPCG(uint64(keys), uint64(aliases)))
	s := &snapshot.Snapshot{}
	const providers = 20
	for i := range providers {
		s.Providers = append(s.Providers, snapshot.Provider{
			Name: fmt.Sprintf("vendor-%02d", i), Protocol: []string{snapshot.ProtocolOpenAI, snapshot.ProtocolAnthropic}[i%2],
			BaseURL:    fmt.Sprintf("https://api-%02d.vendor.example/v1", i),
			Credential: &snapshot.Credential{SecretName: fmt.Sprintf("vendor-%02d", i), SecretKey: "apiKey"},
		})
	}
	models := []string{"large-2025-06", "medium-2025-03", "small-2024-11", "reasoning-pro", "fast-mini"}
	for i := range aliases {
		s.Aliases = append(s.Aliases, snapshot.Alias{
			Name:      ScaleAliasName(i),
			Primary:   snapshot.Route{Provider: fmt.Sprintf("vendor-%02d", i%providers), Model: models[i%len(models)]},
			Fallbacks: []snapshot.Route{{Provider: fmt.Sprintf("vendor-%02d", (i+1)%providers), Model: models[(i+2)%len(models)]}},
		})
	}
	expiry := time.Date(2031, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := range keys {
		plaintext := ScaleKeyPlaintext(r)
		prefix, _ := keyformat.PrefixOf(plaintext)
		k := snapshot.Key{
			ID:        fmt.Sprintf("team-%04d-svc-%06d", i%max(aliases, 1), i),
			Prefix:    prefix,
			Hash:      keyformat.Hash(plaintext),
			RateLimit: snapshot.RateLimit{RPM: 60 * (1 + r.IntN(20)), Burst: 5 + r.IntN(50)},
			Disabled:  r.IntN(50) == 0,
		}
		switch n := r.IntN(4); {
		case n == 0 || aliases == 0:
			k.Models = []string{snapshot.AllModels}
		default:
			for j := range n {
				k.Models = append(k.Models, ScaleAliasName((i+j*7)%aliases))
			}
		}
		if r.IntN(10) == 0 {
			e := expiry.Add(time.Duration(r.IntN(365*24)) * time.Hour)
			k.ExpiresAt = &e
		}
		s.Keys = append(s.Keys, k)
	}
	s.Normalize()
	return s
}

// ScaleAliasName is the name of the i-th alias of ScaleSnapshot.
func ScaleAliasName(i int) string { return fmt.Sprintf("team-%04d-chat", i) }

// ScaleKeyPlaintext draws a well-formed plaintext key from r (deterministic
// for a seeded r; for fixtures only, never for a real key).
func ScaleKeyPlaintext(r *rand.Rand) string {
	const idChars = "abcdefghijklmnopqrstuvwxyz0123456789"
	const secretChars = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
	b := []byte(keyformat.Prefix)
	for range 10 {
		b = append(b, idChars[r.IntN(len(idChars))])
	}
	b = append(b, '_')
	for range 40 {
		b = append(b, secretChars[r.IntN(len(secretChars))])
	}
	return string(b)
}
