package keys

import (
	"errors"
	"fmt"
	"time"

	"github.com/llmgw/llmgw/api/snapshot"
)

// CreateOptions describes a new key. Zero RPM/Burst take the snapshot defaults.
type CreateOptions struct {
	// ID names the key in snapshots, records and status; it must be a DNS-1123
	// subdomain so that it can also be a GatewayKey's metadata.name.
	ID string
	// Models are the alias names the key may use, or ["*"] for all. Required: an
	// empty list is an error rather than a silent "everything".
	Models    []string
	RPM       int
	Burst     int
	ExpiresAt *time.Time
	Disabled  bool
}

// Create generates a key and returns its plaintext (the only time it exists) and
// its normalized, hash-only snapshot entry.
func Create(opts CreateOptions) (plaintext string, entry snapshot.Key, err error) {
	if err := validID(opts.ID); err != nil {
		return "", snapshot.Key{}, err
	}
	if opts.ExpiresAt != nil && !opts.ExpiresAt.After(time.Now()) {
		return "", snapshot.Key{}, fmt.Errorf("key %q: expiry %s is not in the future", opts.ID, opts.ExpiresAt.Format(time.RFC3339))
	}
	plaintext, prefix, hash, err := Generate()
	if err != nil {
		return "", snapshot.Key{}, err
	}
	entry = snapshot.Key{
		ID:        opts.ID,
		Prefix:    prefix,
		Hash:      hash,
		Models:    append([]string(nil), opts.Models...),
		RateLimit: snapshot.RateLimit{RPM: opts.RPM, Burst: opts.Burst},
		Disabled:  opts.Disabled,
		ExpiresAt: opts.ExpiresAt,
	}
	entry.Normalize()
	if err := snapshot.ValidateKey(&entry); err != nil {
		return "", snapshot.Key{}, err
	}
	return plaintext, entry, nil
}

// validID accepts a DNS-1123 subdomain: lowercase alphanumerics, '-' and '.',
// starting and ending with an alphanumeric, at most 253 chars.
func validID(id string) error {
	if id == "" {
		return errors.New("key id is required")
	}
	bad := len(id) > 253
	for i := 0; i < len(id) && !bad; i++ {
		c := id[i]
		alnum := 'a' <= c && c <= 'z' || '0' <= c && c <= '9'
		edge := i == 0 || i == len(id)-1
		bad = !alnum && (edge || c != '-' && c != '.')
	}
	if bad {
		return fmt.Errorf("key id %q must be a DNS-1123 subdomain (lowercase letters, digits, '-' and '.', starting and ending with a letter or digit, at most 253 chars)", Redact(id))
	}
	return nil
}
