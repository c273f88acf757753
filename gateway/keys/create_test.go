package keys

import (
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/llmgw/llmgw/api/keyformat"
	"github.com/llmgw/llmgw/api/snapshot"
)

func TestCreate(t *testing.T) {
	exp := time.Now().Add(time.Hour).In(time.FixedZone("x", 3600))
	plain, entry, err := Create(CreateOptions{ID: "key-a", Models: []string{"b", "a", "b"}, RPM: 120, ExpiresAt: &exp})
	if err != nil {
		t.Fatal(err)
	}
	if p, ok := keyformat.PrefixOf(plain); !ok || p != entry.Prefix {
		t.Fatalf("plaintext %q and prefix %q disagree", plain, entry.Prefix)
	}
	if !keyformat.Verify(plain, entry.Hash) {
		t.Fatal("entry hash does not verify the plaintext")
	}
	if entry.ID != "key-a" || strings.Join(entry.Models, ",") != "a,b" ||
		entry.RateLimit != (snapshot.RateLimit{RPM: 120, Burst: snapshot.DefaultBurst}) ||
		entry.ExpiresAt.Location() != time.UTC || !entry.ExpiresAt.Equal(exp) {
		t.Fatalf("entry not normalized: %+v", entry)
	}
	_, again, _ := Create(CreateOptions{ID: "key-a", Models: []string{"*"}})
	if again.Prefix == entry.Prefix || again.Hash == entry.Hash {
		t.Fatal("two keys share a prefix or hash")
	}
}

func TestCreateRejects(t *testing.T) {
	past := time.Now().Add(-time.Minute)
	cases := map[string]struct {
		opts CreateOptions
		want string
	}{
		"no id":         {CreateOptions{Models: []string{"*"}}, "key id is required"},
		"uppercase id":  {CreateOptions{ID: "Key-A", Models: []string{"*"}}, "DNS-1123"},
		"id with space": {CreateOptions{ID: "key a", Models: []string{"*"}}, "DNS-1123"},
		"id edge dash":  {CreateOptions{ID: "key-", Models: []string{"*"}}, "DNS-1123"},
		"no models":     {CreateOptions{ID: "k"}, "models is empty"},
		"bad model":     {CreateOptions{ID: "k", Models: []string{"a b"}}, "whitespace"},
		"negative rpm":  {CreateOptions{ID: "k", Models: []string{"*"}, RPM: -1}, "rateLimit.rpm"},
		"expired":       {CreateOptions{ID: "k", Models: []string{"*"}, ExpiresAt: &past}, "not in the future"},
	}
	for name, c := range cases {
		_, _, err := Create(c.opts)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err = %v, want it to mention %q", name, err, c.want)
		}
	}
}

// TestValidID: a key id is also a GatewayKey's metadata.name, so it follows
// the API server's rule for object names; an id the API server would refuse
// must fail here, before a key is printed.
func TestValidID(t *testing.T) {
	cases := []struct {
		id   string
		want string // "" means valid
	}{
		{"a", ""},
		{"0", ""},
		{"key-a", ""},
		{"team.prod-1", ""},
		{"a.b.c", ""},
		{"1-2.3-4", ""},
		{strings.Repeat("a", 253), ""},
		{strings.Repeat("a", 63) + "." + strings.Repeat("b", 189), ""},

		{"", "key id is required"},
		{"a..b", `key id "a..b" is not valid`},
		{"a-.b", `key id "a-.b" is not valid`},
		{"a.-b", `key id "a.-b" is not valid`},
		{"-a", `key id "-a" is not valid`},
		{"a-", `key id "a-" is not valid`},
		{".a", `key id ".a" is not valid`},
		{"a.", `key id "a." is not valid`},
		{".", `key id "." is not valid`},
		{"..", `key id ".." is not valid`},
		{"A", `key id "A" is not valid`},
		{"key_a", `key id "key_a" is not valid`},
		{"a/b", `key id "a/b" is not valid`},
		{"a%b", `key id "a%b" is not valid`},
		{"key a", `key id "key a" is not valid`},
		{strings.Repeat("a", 254), "key id is 254 characters long; at most 253 are allowed"},
	}
	for _, c := range cases {
		err := validID(c.id)
		switch {
		case c.want == "" && err != nil:
			t.Errorf("validID(%q) = %v, want it accepted", c.id, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("validID(%q) = %v, want an error mentioning %q", c.id, err, c.want)
		}
		// The rule is the API server's own: both must agree on every case.
		if api := validation.IsDNS1123Subdomain(c.id); (len(api) == 0) != (c.want == "") {
			t.Errorf("%q: IsDNS1123Subdomain says %v, the table says valid=%v", c.id, api, c.want == "")
		}
	}
	// An invalid id says what a valid one looks like.
	err := validID("a..b")
	for _, hint := range []string{"DNS-1123 subdomain", "lowercase letters, digits, '-' and '.'", "starts and ends with a letter or digit", "metadata.name", "team-a"} {
		if err == nil || !strings.Contains(err.Error(), hint) {
			t.Errorf("error %v does not say %q", err, hint)
		}
	}
	// A pasted key is not echoed back in the error.
	plain, _, _, _ := keyformat.Generate()
	if err := validID(plain); err == nil || strings.Contains(err.Error(), plain) {
		t.Errorf("validID(plaintext key) = %v", err)
	}
}
