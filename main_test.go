package main

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// Every command explains its flags and exits 0 on --help.
func TestHelp(t *testing.T) {
	if os.Getenv("LLMGW_MAIN_CHILD") == "1" {
		os.Exit(run(strings.Fields(os.Getenv("LLMGW_ARGS"))))
	}
	cases := map[string][]string{
		"--help":              {"gateway", "up", "keys", "mockprovider"},
		"gateway --help":      {"-snapshot", "-addr", "-db", "-ledger-fail-open"},
		"up --help":           {"-state-dir", "-addr"},
		"mockprovider --help": {"-flavor", "-require-key-file"},
		"keys create --help":  {"-id", "-models", "-rpm"},
	}
	for args, want := range cases {
		cmd := exec.Command(os.Args[0], "-test.run=^TestHelp$")
		cmd.Env = append(os.Environ(), "LLMGW_MAIN_CHILD=1", "LLMGW_ARGS="+args)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("llmgw %s: %v\n%s", args, err, out)
		}
		for _, w := range want {
			if !strings.Contains(string(out), w) {
				t.Fatalf("llmgw %s does not mention %s:\n%s", args, w, out)
			}
		}
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelp$")
	cmd.Env = append(os.Environ(), "LLMGW_MAIN_CHILD=1", "LLMGW_ARGS=nonsense")
	if err := cmd.Run(); err == nil {
		t.Fatal("unknown command exited 0")
	}
}
