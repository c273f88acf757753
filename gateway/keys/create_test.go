package keys

import (
	"strings"
	"testing"
	"time"

	"github.com/llmgw/llmgw/api/snapshot"
)

func TestCreate(t *testing.T) {
	exp := time.Now().Add(time.Hour).In(time.FixedZone("x", 3600))
	plain, entry, err := Create(CreateOptions{ID: "key-a", Models: []string{"b", "a", "b"}, RPM: 120, ExpiresAt: &exp})
	if err != nil {
		t.Fatal(err)
	}
	if p, ok := PrefixOf(plain); !ok || p != entry.Prefix {
		t.Fatalf("plaintext %q and prefix %q disagree", plain, entry.Prefix)
	}
	if !Verify(plain, entry.Hash) {
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
	for _, id := range []string{"a", "key-a", "team.prod-1", strings.Repeat("a", 253)} {
		if err := validID(id); err != nil {
			t.Errorf("validID(%q) = %v", id, err)
		}
	}
	if validID(strings.Repeat("a", 254)) == nil || validID(".a") == nil {
		t.Error("validID accepts an invalid id")
	}
}
