package keys

import (
	"errors"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/validate/content"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/llmgw/llmgw/api/keyformat"
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
	plaintext, prefix, hash, err := keyformat.Generate()
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

// validID accepts an id that can also be a GatewayKey's metadata.name, checked
// as the API server checks a custom resource's name on create: a DNS-1123
// subdomain (apimachinery's NameIsDNSSubdomain, i.e. IsDNS1123Subdomain) that is
// also a valid path segment. So `--output yaml` never prints a resource that
// kubectl apply refuses, and ids such as "a..b" or "a-.b" are rejected here.
func validID(id string) error {
	if id == "" {
		return errors.New("key id is required")
	}
	if len(id) > validation.DNS1123SubdomainMaxLength {
		return fmt.Errorf("key id is %d characters long; at most %d are allowed, as it is also the GatewayKey's metadata.name",
			len(id), validation.DNS1123SubdomainMaxLength)
	}
	if len(apivalidation.NameIsDNSSubdomain(id, false)) > 0 || len(content.IsPathSegmentName(id)) > 0 {
		return fmt.Errorf("key id %q is not valid: it is also the GatewayKey's metadata.name, so it must be a DNS-1123 subdomain: "+
			"lowercase letters, digits, '-' and '.', where every '.'-separated part starts and ends with a letter or digit "+
			"(for example team-a or team-a.prod)", keyformat.Redact(id))
	}
	return nil
}
