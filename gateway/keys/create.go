package keys

import (
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
	// TokensPerMinute is the key's token limit; 0 means none.
	TokensPerMinute int64
	// Budget is the key's own budget, nil for none; an empty currency or
	// period takes the snapshot default (USD, month).
	Budget *snapshot.Budget
	// Group names the BudgetGroup whose limits the key shares, "" for none.
	// It must be a DNS-1123 subdomain, as it is the group's metadata.name.
	Group string
}

// Create generates a key and returns its plaintext (the only time it exists) and
// its normalized, hash-only snapshot entry.
func Create(opts CreateOptions) (plaintext string, entry snapshot.Key, err error) {
	if err := validID(opts.ID); err != nil {
		return "", snapshot.Key{}, err
	}
	if opts.Group != "" {
		if err := validObjectName("group", opts.Group, budgetGroupName); err != nil {
			return "", snapshot.Key{}, err
		}
	}
	if opts.ExpiresAt != nil && !opts.ExpiresAt.After(time.Now()) {
		return "", snapshot.Key{}, fmt.Errorf("key %q: expiry %s is not in the future", opts.ID, opts.ExpiresAt.Format(time.RFC3339))
	}
	plaintext, prefix, hash, err := generate()
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

		TokensPerMinute: opts.TokensPerMinute,
		Group:           opts.Group,
	}
	if opts.Budget != nil {
		b := *opts.Budget // Normalize fills defaults: not in the caller's copy
		entry.Budget = &b
	}
	entry.Normalize()
	if err := snapshot.ValidateKey(&entry); err != nil {
		return "", snapshot.Key{}, err
	}
	return plaintext, entry, nil
}

// generate makes every new key, created or rotated.
func generate() (plaintext, prefix, hash string, err error) { return keyformat.Generate() }

// What a name checked by validObjectName also is; its errors say so.
const (
	gatewayKeyName  = "also the GatewayKey's metadata.name"
	budgetGroupName = "a BudgetGroup's metadata.name"
)

// validID accepts an id that can also be a GatewayKey's metadata.name (see
// validObjectName), so that `--output yaml` never prints a resource that
// kubectl apply refuses, and ids such as "a..b" or "a-.b" are rejected here.
func validID(id string) error { return validObjectName("key id", id, gatewayKeyName) }

// validObjectName accepts name if it can be the metadata.name of a custom
// resource, checked as the API server checks one on create: a DNS-1123
// subdomain (apimachinery's NameIsDNSSubdomain, i.e. IsDNS1123Subdomain) that
// is also a valid path segment. subject names the value in errors ("key id",
// "--group"), role says which object's name it is.
func validObjectName(subject, name, role string) error {
	if name == "" {
		return fmt.Errorf("%s is required", subject)
	}
	if len(name) > validation.DNS1123SubdomainMaxLength {
		return fmt.Errorf("%s is %d characters long; at most %d are allowed, as it is %s",
			subject, len(name), validation.DNS1123SubdomainMaxLength, role)
	}
	if len(apivalidation.NameIsDNSSubdomain(name, false)) > 0 || len(content.IsPathSegmentName(name)) > 0 {
		return fmt.Errorf("%s %s is not valid: it is %s, so it must be a DNS-1123 subdomain: "+
			"lowercase letters, digits, '-' and '.', where every '.'-separated part starts and ends with a letter or digit "+
			"(for example team-a or team-a.prod)", subject, quoteRedacted(name), role)
	}
	return nil
}
