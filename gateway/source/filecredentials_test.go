package source

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/llmgw/llmgw/api/snapshot"
)

// Credential files are read below the credentials directory only: not
// through "..", an absolute path, or a symbolic link pointing out of it.
func TestFileCredentialsStayInTheirDirectory(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "creds")
	if err := os.MkdirAll(filepath.Join(dir, "sub"), 0o700); err != nil {
		t.Fatal(err)
	}
	for path, content := range map[string]string{
		filepath.Join(dir, "beta.key"):         "in-dir-secret\n",
		filepath.Join(dir, "sub", "alpha.key"): "nested-secret",
		filepath.Join(root, "outside.key"):     "outside-secret",
		filepath.Join(dir, "empty.key"):        " \n",
	} {
		if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(filepath.Join(root, "outside.key"), filepath.Join(dir, "link.key")); err != nil {
		t.Fatal(err)
	}
	r := fileCredentials{baseDir: dir}
	for _, tc := range []struct {
		file, want, wantErr string
	}{
		{"beta.key", "in-dir-secret", ""},
		{"sub/alpha.key", "nested-secret", ""},
		{"../outside.key", "", "reading credential file"},
		{filepath.Join(root, "outside.key"), "", "reading credential file"},
		{"link.key", "", "reading credential file"},
		{"empty.key", "", "is empty"},
	} {
		got, err := r.Resolve(context.Background(), "p", snapshot.Credential{File: tc.file})
		if tc.wantErr == "" && (err != nil || got != tc.want) {
			t.Errorf("%s: %q, %v; want %q", tc.file, got, err, tc.want)
		}
		if tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr) || strings.Contains(err.Error(), "-secret")) {
			t.Errorf("%s: %q, %v; want an error with %q that shows no content", tc.file, got, err, tc.wantErr)
		}
	}
}
