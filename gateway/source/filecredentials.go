package source

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/llmgw/llmgw/api/snapshot"
)

// fileCredentials resolves `credential.file` references (standalone mode).
// Relative paths are relative to the snapshot file's directory, so a state
// directory can be moved as a whole.
type fileCredentials struct {
	baseDir string
}

func (f fileCredentials) Resolve(_ context.Context, provider string, ref snapshot.Credential) (string, error) {
	if ref.File == "" {
		return "", errors.New("standalone mode supports only file credential references")
	}
	path := ref.File
	if !filepath.IsAbs(path) {
		path = filepath.Join(f.baseDir, path)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		// The path is configuration, not a secret; the content never appears.
		return "", fmt.Errorf("reading credential file for %s: %w", provider, err)
	}
	secret := strings.TrimSpace(string(b))
	if secret == "" {
		return "", fmt.Errorf("credential file for %s is empty", provider)
	}
	return secret, nil
}
