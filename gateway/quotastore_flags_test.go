package gateway

import (
	"context"
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/llmgw/llmgw/gateway/peers"
)

func TestQuotaStoreFlags(t *testing.T) {
	dir := t.TempDir()
	pwFile := filepath.Join(dir, "password")
	if err := os.WriteFile(pwFile, []byte("from-the-file\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	empty := filepath.Join(dir, "empty")
	if err := os.WriteFile(empty, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name    string
		args    []string
		env     string
		peers   peers.Config
		want    QuotaStore
		wantErr string
	}{
		{name: "no store: each replica counts alone", args: nil},
		{name: "password from the file", args: []string{"--quota-store=redis://store:6379", "--quota-store-password-file=" + pwFile},
			env: "ignored", want: QuotaStore{URL: "redis://store:6379", Password: "from-the-file", Timeout: defaultQuotaTimeout, Replicas: 1}},
		{name: "password from the environment", args: []string{"--quota-store=redis://store:6379", "--quota-store-fail-closed", "--quota-store-timeout=2s"},
			env: "from-the-env", want: QuotaStore{URL: "redis://store:6379", Password: "from-the-env", FailClosed: true, Timeout: 2e9, Replicas: 1}},
		{name: "replicas from the peers", args: []string{"--quota-store=redis://store:6379"},
			peers: peers.Config{Service: "gw-peers", Replicas: 3, Self: "gw-1"},
			want:  QuotaStore{URL: "redis://store:6379", Timeout: defaultQuotaTimeout, Replicas: 3}},
		{name: "an empty password file", args: []string{"--quota-store=redis://store:6379", "--quota-store-password-file=" + empty}, wantErr: "is empty"},
		{name: "a missing password file", args: []string{"--quota-store=redis://store:6379", "--quota-store-password-file=" + dir + "/nope"}, wantErr: "no such file"},
		{name: "fail-closed without a store", args: []string{"--quota-store-fail-closed"}, wantErr: "need --quota-store"},
		{name: "another scheme", args: []string{"--quota-store=http://store:6379"}, wantErr: `scheme "http"`},
		{name: "a zero timeout", args: []string{"--quota-store=redis://store:6379", "--quota-store-timeout=0s"}, wantErr: "must be positive"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv(EnvQuotaStorePassword, tc.env)
			fs := flag.NewFlagSet("t", flag.ContinueOnError)
			q := addQuotaStoreFlags(fs)
			if err := fs.Parse(tc.args); err != nil {
				t.Fatal(err)
			}
			cfg := Config{Addr: "127.0.0.1:8080"}
			err := q.configure(&cfg, tc.peers)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("configure: %v, want an error containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got := cfg.QuotaStore
			if got.ReadyReplicas != nil {
				t.Error("ReadyReplicas set without discovery: standalone replicas are a fixed count")
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("QuotaStore %+v, want %+v", got, tc.want)
			}
		})
	}
}

// A password in the URL is refused before anything connects, and the
// refusal does not repeat it.
func TestQuotaStoreURLWithPasswordIsRefused(t *testing.T) {
	err := Main(context.Background(), []string{"--snapshot=/nonexistent.json", "--db=" + filepath.Join(t.TempDir(), "u.db"),
		"--quota-store=redis://:sup3rsecret@store:6379"})
	if err == nil || !strings.Contains(err.Error(), "must not contain a password") || strings.Contains(err.Error(), "sup3rsecret") {
		t.Fatalf("Main with a password in --quota-store: %v", err)
	}
}
