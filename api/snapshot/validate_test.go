package snapshot

import (
	"strings"
	"testing"
)

func TestValidSnapshotIsValid(t *testing.T) {
	if err := validSnapshot().Validate(); err != nil {
		t.Fatal(err)
	}
}

// TestValidateRules covers each rule: a mutation of a valid snapshot and the
// words the error must contain (object name included).
func TestValidateRules(t *testing.T) {
	cases := []struct {
		name   string
		mutate func(s *Snapshot)
		want   []string
	}{
		// references
		{"dangling primary", func(s *Snapshot) { s.Aliases[0].Primary.Provider = "nope" },
			[]string{`alias "chat-alpha": primary: provider "nope" does not exist`}},
		{"dangling fallback", func(s *Snapshot) { s.Aliases[1].Fallbacks[0].Provider = "gone" },
			[]string{`alias "chat-beta": fallbacks[0]: provider "gone" does not exist`}},
		{"model of unknown alias", func(s *Snapshot) { s.Keys[1].Models = []string{"chat-alpha", "chat-gamma"} },
			[]string{`key "key-b": models: alias "chat-gamma" does not exist`}},
		// duplicates
		{"duplicate provider", func(s *Snapshot) { s.Providers[1].Name = "alpha" },
			[]string{`provider "alpha": duplicate provider name`}},
		{"duplicate alias", func(s *Snapshot) { s.Aliases[1].Name = "chat-alpha" },
			[]string{`alias "chat-alpha": duplicate alias name`}},
		{"duplicate key id", func(s *Snapshot) { s.Keys[1].ID = "key-a" },
			[]string{`key "key-a": duplicate key id`}},
		{"duplicate key prefix", func(s *Snapshot) { s.Keys[1].Prefix = s.Keys[0].Prefix },
			[]string{`key "key-b": duplicate key prefix lgw_keyaaaaaaa`}},
		// fallback bounds
		{"maxFallbacks negative", func(s *Snapshot) { s.Aliases[0].MaxFallbacks = intp(-1) },
			[]string{`alias "chat-alpha": maxFallbacks must be within 0..3, got -1`}},
		{"maxFallbacks above 3", func(s *Snapshot) {
			s.Aliases[0].Fallbacks = []Route{{"beta", "a"}, {"beta", "b"}, {"beta", "c"}, {"beta", "d"}}
			s.Aliases[0].MaxFallbacks = intp(4)
		}, []string{"maxFallbacks must be within 0..3, got 4", "at most 3 fallbacks, got 4"}},
		{"maxFallbacks above list", func(s *Snapshot) { s.Aliases[0].MaxFallbacks = intp(2) },
			[]string{`alias "chat-alpha": maxFallbacks 2 exceeds the 1 fallbacks listed`}},
		{"too many fallbacks", func(s *Snapshot) {
			s.Aliases[2].Fallbacks = []Route{{"beta", "a"}, {"beta", "b"}, {"beta", "c"}, {"beta", "d"}}
		}, []string{`alias "chat-restricted": at most 3 fallbacks, got 4`}},
		// key format
		{"hash not sha256", func(s *Snapshot) { s.Keys[0].Hash = "md5:abc" },
			[]string{`key "key-a": hash must be "sha256:"`}},
		{"hash uppercase", func(s *Snapshot) { s.Keys[0].Hash = strings.ToUpper(hashA) },
			[]string{`key "key-a": hash must be`}},
		{"plaintext as hash", func(s *Snapshot) { s.Keys[0].Hash = plainA },
			[]string{`key "key-a": hash must be`, `keys["key-a"].hash: looks like a plaintext gateway key`}},
		{"bad prefix", func(s *Snapshot) { s.Keys[0].Prefix = "lgw_ABC" },
			[]string{`key "key-a": prefix must be "lgw_"`}},
		{"empty prefix", func(s *Snapshot) { s.Keys[0].Prefix = "" }, []string{`key "key-a": prefix must be`}},
		// plaintext keys anywhere
		{"key in key id", func(s *Snapshot) { s.Keys[0].ID = plainA },
			[]string{`keys["lgw_keyaaaaaaa_<redacted>"].id: looks like a plaintext gateway key`}},
		{"key in credential file", func(s *Snapshot) { s.Providers[1].Credential.File = "/keys/" + plainB },
			[]string{`providers["beta"].credential.file: looks like a plaintext gateway key`}},
		{"key in model", func(s *Snapshot) { s.Aliases[0].Fallbacks[0].Model = "x" + plainB },
			[]string{`aliases["chat-alpha"].fallbacks[0].model: looks like a plaintext gateway key`}},
		{"key in URL path", func(s *Snapshot) { s.Providers[0].BaseURL = "http://h/" + plainA },
			[]string{`providers["alpha"].baseURL: looks like a plaintext gateway key`}},
		{"key in version", func(s *Snapshot) { s.Version = plainA }, []string{`version: looks like a plaintext`}},
		// providers
		{"unknown protocol", func(s *Snapshot) { s.Providers[0].Protocol = "grpc" },
			[]string{`provider "alpha": protocol must be "openai" or "anthropic", got "grpc"`}},
		{"protocol case", func(s *Snapshot) { s.Providers[0].Protocol = "OpenAI" }, []string{`protocol must be`}},
		{"responsesAPI on anthropic", func(s *Snapshot) { s.Providers[1].ResponsesAPI = true },
			[]string{`provider "beta": responsesAPI is only for protocol "openai"`}},
		{"ftp URL", func(s *Snapshot) { s.Providers[0].BaseURL = "ftp://h" }, []string{`provider "alpha": baseURL must use http or https`}},
		{"URL without scheme", func(s *Snapshot) { s.Providers[0].BaseURL = "127.0.0.1:9001" }, []string{`baseURL`}},
		{"URL without host", func(s *Snapshot) { s.Providers[0].BaseURL = "http:///v1" }, []string{`baseURL has no host`}},
		{"URL port only", func(s *Snapshot) { s.Providers[0].BaseURL = "http://:80" }, []string{`baseURL has no host`}},
		{"empty URL", func(s *Snapshot) { s.Providers[0].BaseURL = "" }, []string{`baseURL is empty`}},
		{"port 0", func(s *Snapshot) { s.Providers[0].BaseURL = "http://h:0" }, []string{`provider "alpha": baseURL has an invalid port`}},
		{"port above 65535", func(s *Snapshot) { s.Providers[0].BaseURL = "http://h:99999/v1" }, []string{`baseURL has an invalid port`}},
		{"credential file absolute", func(s *Snapshot) { s.Providers[1].Credential.File = "/etc/shadow" },
			[]string{`provider "beta": credential.file must be a relative path inside the gateway's credentials directory`}},
		{"credential file escaping", func(s *Snapshot) { s.Providers[1].Credential.File = "keys/../../etc/shadow" },
			[]string{`credential.file must be a relative path inside`}},
		{"URL with userinfo", func(s *Snapshot) { s.Providers[0].BaseURL = "https://u:hunter2@h" },
			[]string{`baseURL must not contain userinfo`}},
		{"URL with query", func(s *Snapshot) { s.Providers[0].BaseURL = "http://h/?api_key=x" }, []string{`must not have a query or fragment`}},
		{"URL with fragment", func(s *Snapshot) { s.Providers[0].BaseURL = "http://h/#x" }, []string{`must not have a query or fragment`}},
		{"credential both", func(s *Snapshot) {
			s.Providers[1].Credential.SecretName, s.Providers[1].Credential.SecretKey = "s", "k"
		},
			[]string{`provider "beta": credential: set either file or secretName+secretKey, not both`}},
		{"credential neither", func(s *Snapshot) { s.Providers[1].Credential = &Credential{} },
			[]string{`provider "beta": credential: set file or secretName+secretKey`}},
		{"secret without key", func(s *Snapshot) { s.Providers[1].Credential = &Credential{SecretName: "s"} },
			[]string{`credential: secretName and secretKey must both be set`}},
		{"connect timeout", func(s *Snapshot) { s.Providers[0].ConnectTimeoutMs = -1 },
			[]string{`provider "alpha": connectTimeoutMs must be within 1..86400000, got -1`}},
		{"header timeout", func(s *Snapshot) { s.Providers[0].ResponseHeaderTimeoutMs = 0 }, []string{`responseHeaderTimeoutMs must be`}},
		// circuit breaker
		{"breaker failures negative", func(s *Snapshot) { s.Providers[0].CircuitBreaker.ConsecutiveFailures = intp(-1) },
			[]string{`provider "alpha": circuitBreaker.consecutiveFailures must be within 0..1000 (0 turns the breaker off), got -1`}},
		{"breaker failures too many", func(s *Snapshot) { s.Providers[0].CircuitBreaker.ConsecutiveFailures = intp(1001) },
			[]string{`circuitBreaker.consecutiveFailures must be within 0..1000`}},
		{"breaker cool-down zero", func(s *Snapshot) { s.Providers[1].CircuitBreaker.CoolDownMs = 0 },
			[]string{`provider "beta": circuitBreaker.coolDownMs must be within 1..86400000, got 0`}},
		{"breaker cool-down too long", func(s *Snapshot) { s.Providers[1].CircuitBreaker.CoolDownMs = MaxTimeoutMs + 1 },
			[]string{`circuitBreaker.coolDownMs must be within`}},
		{"breaker no probes", func(s *Snapshot) { s.Providers[0].CircuitBreaker.HalfOpenProbes = 0 },
			[]string{`provider "alpha": circuitBreaker.halfOpenProbes must be within 1..100, got 0`}},
		{"breaker too many probes", func(s *Snapshot) { s.Providers[0].CircuitBreaker.HalfOpenProbes = 101 },
			[]string{`circuitBreaker.halfOpenProbes must be within 1..100, got 101`}},
		// alias timeouts
		{"total zero", func(s *Snapshot) { s.Aliases[0].Timeouts.TotalMs = 0 },
			[]string{`alias "chat-alpha": timeouts.totalMs must be within`, "timeouts.attemptMs (20000) exceeds timeouts.totalMs (0)"}},
		{"attempt negative", func(s *Snapshot) { s.Aliases[0].Timeouts.AttemptMs = -5 }, []string{`timeouts.attemptMs must be within 1..86400000, got -5`}},
		{"first chunk zero", func(s *Snapshot) { s.Aliases[0].Timeouts.FirstChunkMs = 0 }, []string{`timeouts.firstChunkMs must be`}},
		{"idle too long", func(s *Snapshot) { s.Aliases[0].Timeouts.IdleMs = MaxTimeoutMs + 1 }, []string{`timeouts.idleMs must be`}},
		{"attempt above total", func(s *Snapshot) { s.Aliases[0].Timeouts.AttemptMs = 70000 },
			[]string{`alias "chat-alpha": timeouts.attemptMs (70000) exceeds timeouts.totalMs (60000)`}},
		// limits
		{"body bytes", func(s *Snapshot) { s.Limits.MaxBodyBytes = -1 }, []string{`limits: maxBodyBytes must be > 0, got -1`}},
		{"messages", func(s *Snapshot) { s.Limits.MaxMessages = 0 }, []string{`limits: maxMessages must be > 0`}},
		{"content chars", func(s *Snapshot) { s.Limits.MaxContentChars = 0 }, []string{`limits: maxContentChars must be > 0`}},
		{"concurrency", func(s *Snapshot) { s.Limits.MaxConcurrent = -3 }, []string{`limits: maxConcurrent must be > 0`}},
		// rate limits
		{"rpm", func(s *Snapshot) { s.Keys[0].RateLimit.RPM = 0 }, []string{`key "key-a": rateLimit.rpm must be > 0, got 0`}},
		{"burst", func(s *Snapshot) { s.Keys[0].RateLimit.Burst = -1 }, []string{`key "key-a": rateLimit.burst must be > 0, got -1`}},
		// names
		{"empty alias name", func(s *Snapshot) { s.Aliases[2].Name = "" }, []string{`alias #2: name is empty`}},
		{"alias name with space", func(s *Snapshot) { s.Aliases[2].Name = "chat restricted" },
			[]string{`alias "chat restricted": name "chat restricted" contains whitespace or control characters`}},
		{"alias name with tab", func(s *Snapshot) { s.Aliases[2].Name = "chat\trestricted" }, []string{`contains whitespace`}},
		{"alias name with control", func(s *Snapshot) { s.Aliases[2].Name = "chat\x00" }, []string{`contains whitespace or control`}},
		{"alias name with NBSP", func(s *Snapshot) { s.Aliases[2].Name = "chat\u00a0x" }, []string{`contains whitespace`}},
		{"alias name bad UTF-8", func(s *Snapshot) { s.Aliases[2].Name = "chat\xff" }, []string{`name is not valid UTF-8`}},
		{"alias name too long", func(s *Snapshot) { s.Aliases[2].Name = strings.Repeat("a", 254) }, []string{`name is longer than 253 bytes`}},
		{"provider name", func(s *Snapshot) {
			s.Providers = append(s.Providers, Provider{Name: "a b", Protocol: "openai", BaseURL: "http://h"})
		},
			[]string{`provider "a b": name "a b" contains whitespace`}},
		{"empty model", func(s *Snapshot) { s.Aliases[0].Primary.Model = "" }, []string{`alias "chat-alpha": primary: model is empty`}},
		{"empty key id", func(s *Snapshot) { s.Keys[0].ID = "" }, []string{`key #0: id is empty`}},
		{"model with space", func(s *Snapshot) { s.Keys[1].Models = []string{"chat alpha"} }, []string{`key "key-b": models: alias name "chat alpha" contains whitespace`}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := validSnapshot()
			c.mutate(s)
			mustContainAll(t, s.Validate(), c.want...)
		})
	}
}

func TestValidateAccepts(t *testing.T) {
	cases := map[string]func(s *Snapshot){
		"no fallback allowed despite a list": func(s *Snapshot) { s.Aliases[0].MaxFallbacks = intp(0) },
		"three fallbacks, all allowed": func(s *Snapshot) {
			s.Aliases[0].Fallbacks = []Route{{"beta", "a"}, {"alpha", "b"}, {"beta", "c"}}
			s.Aliases[0].MaxFallbacks = intp(3)
		},
		"unset maxFallbacks":     func(s *Snapshot) { s.Aliases[0].MaxFallbacks = nil },
		"secret credential":      func(s *Snapshot) { s.Providers[1].Credential = &Credential{SecretName: "s", SecretKey: "k"} },
		"https with port, path":  func(s *Snapshot) { s.Providers[0].BaseURL = "https://api.example.com:8443/openai/v1/" },
		"IPv6 host":              func(s *Snapshot) { s.Providers[0].BaseURL = "http://[::1]:9001" },
		"model names with slash": func(s *Snapshot) { s.Aliases[0].Primary.Model = "meta-llama/Llama-3.1-8B:free" },
		"no keys, no aliases":    func(s *Snapshot) { s.Keys, s.Aliases = []Key{}, []Alias{} },
		"attempt equals total":   func(s *Snapshot) { s.Aliases[0].Timeouts.AttemptMs = s.Aliases[0].Timeouts.TotalMs },
		"breaker off":            func(s *Snapshot) { s.Providers[0].CircuitBreaker.ConsecutiveFailures = intp(0) },
		"breaker at its bounds": func(s *Snapshot) {
			s.Providers[0].CircuitBreaker = CircuitBreaker{ConsecutiveFailures: intp(MaxConsecutiveFailures), CoolDownMs: MaxTimeoutMs, HalfOpenProbes: MaxHalfOpenProbes}
			s.Providers[1].CircuitBreaker = CircuitBreaker{ConsecutiveFailures: intp(1), CoolDownMs: 1, HalfOpenProbes: 1}
		},
	}
	for name, mutate := range cases {
		s := validSnapshot()
		mutate(s)
		if err := s.Validate(); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// TestValidateReportsEverything: one run lists every problem, so one fix cycle
// suffices.
func TestValidateReportsEverything(t *testing.T) {
	s := validSnapshot()
	s.Aliases[0].Primary.Provider = "nope"
	s.Keys[0].RateLimit.RPM = -1
	s.Limits.MaxMessages = -1
	s.Providers[0].Protocol = "x"
	err := s.Validate()
	mustContainAll(t, err, `primary: provider "nope"`, "rateLimit.rpm", "maxMessages", "protocol must be")
	if n := len(strings.Split(err.Error(), "\n")); n != 4 {
		t.Errorf("want 4 problems, one per line; got %d:\n%v", n, err)
	}
}

func TestValidateNeverQuotesSecrets(t *testing.T) {
	s := validSnapshot()
	s.Providers[0].BaseURL = "https://user:hunter2@h/"
	s.Keys[0].ID = plainA
	s.Keys[1].Models = []string{plainB}
	err := s.Validate()
	mustContainAll(t, err, "userinfo")
	if strings.Contains(err.Error(), "hunter2") {
		t.Fatalf("error quotes a URL password: %v", err)
	}
}

func TestValidateKey(t *testing.T) {
	k := validSnapshot().Keys[1]
	k.Models = []string{"not-checked-for-existence"}
	if err := ValidateKey(&k); err != nil {
		t.Fatal(err)
	}
	k.Hash = plainB
	mustContainAll(t, ValidateKey(&k), "hash must be", "looks like a plaintext gateway key")
}

// A key is defined with at least one model, but a snapshot may carry it with
// none: the controller leaves out the names whose alias is not served, and
// the key must keep authenticating (403/404 on models, never 401).
func TestKeyWithoutModels(t *testing.T) {
	k := validSnapshot().Keys[1]
	k.Models = nil
	mustContainAll(t, ValidateKey(&k), "models is empty")
	s := validSnapshot()
	s.Keys[1].Models = nil
	if err := s.Validate(); err != nil {
		t.Fatalf("a snapshot with a key left without models: %v", err)
	}
	b, err := Encode(s)
	if err != nil {
		t.Fatal(err)
	}
	back, err := Parse(b)
	if err != nil {
		t.Fatalf("parsing it back: %v\n%s", err, b)
	}
	if len(back.Keys[1].Models) != 0 {
		t.Fatalf("models after a round trip: %v", back.Keys[1].Models)
	}
}
