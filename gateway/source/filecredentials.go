package source

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/llmgw/llmgw/api/snapshot"
)

// fileCredentials resolves `credential.file` references (standalone mode)
// below one directory: the operator's --credentials-dir, by default the
// snapshot file's own directory (so a state directory can be moved as a
// whole). The snapshot names a relative path (validation refuses others) and
// the file is opened with os.OpenInRoot, so neither ".." nor a symbolic link
// reaches a file outside that directory.
type fileCredentials struct {
	baseDir string
}

func (f fileCredentials) Resolve(_ context.Context, provider string, ref snapshot.Credential) (string, error) {
	if ref.File == "" {
		return "", errors.New("standalone mode supports only file credential references")
	}
	file, err := os.OpenInRoot(f.baseDir, ref.File)
	if err != nil {
		// The path is configuration, not a secret; the content never appears.
		return "", fmt.Errorf("reading credential file for %s: %w", provider, err)
	}
	defer file.Close()
	b, err := io.ReadAll(io.LimitReader(file, 64<<10))
	if err != nil {
		return "", fmt.Errorf("reading credential file for %s: %w", provider, err)
	}
	secret := strings.TrimSpace(string(b))
	if secret == "" {
		return "", fmt.Errorf("credential file for %s is empty", provider)
	}
	return secret, nil
}
