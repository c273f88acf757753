//go:build agents

package agents

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// codexPrompt asks, through the directive, for one exec_command call (the
// shell tool of Codex 0.17x) that writes the marker and prints it.
const codexPrompt = "Write the marker file, then say what you did.\n" +
	`@mock *:tool=exec_command *:args={"cmd": "echo ` + marker + ` > marker.txt && cat marker.txt"}`

// codexConfig points Codex at the target through a provider of its own
// (Codex appends /responses to base_url), with the key in an environment
// variable, no retries (a failure shows at once), no websocket transport,
// and analytics, feedback, OpenTelemetry export, update checks, history and
// the features that call home (plugins, apps) off. --strict-config makes Codex refuse a key it does not know, so a
// renamed setting cannot silently turn something back on.
const codexConfig = `model = %q
model_provider = "llmgw"
check_for_update_on_startup = false

[model_providers.llmgw]
name = "llmgw agents test"
base_url = %q
env_key = "LLMGW_AGENTS_KEY"
wire_api = "responses"
supports_websockets = false
request_max_retries = 0
stream_max_retries = 0

[analytics]
enabled = false

[feedback]
enabled = false

[otel]
exporter = "none"

[history]
persistence = "none"

# plugins syncs a plugin marketplace from github.com and chatgpt.com at start
# (seen as DNS lookups under strace); apps are ChatGPT connectors.
[features]
plugins = false
apps = false
`

// TestCodex runs `codex exec` once through each of the target's routes:
// the mock asks for an exec_command call, Codex runs it and sends its
// output back as a function_call_output, and the mock's answer to that is
// the last message. Through the gateway, the session's records are
// checked too (Codex names its session in a Session-Id header, which the
// gateway keeps).
func TestCodex(t *testing.T) {
	bin := agentBin(t, "codex", "CODEX_VERSION")
	tg := startTarget(t)
	for _, rt := range tg.codex {
		t.Run(rt.model, func(t *testing.T) {
			tg.resetMocks(t)
			s := newSandbox(t)
			codexHome := filepath.Join(s.home, ".codex")
			if err := os.MkdirAll(codexHome, 0o700); err != nil {
				t.Fatal(err)
			}
			cfg := fmt.Sprintf(codexConfig, rt.model, tg.openaiURL)
			if err := os.WriteFile(filepath.Join(codexHome, "config.toml"), []byte(cfg), 0o600); err != nil {
				t.Fatal(err)
			}
			last := filepath.Join(s.home, "last-message.txt")
			env := s.env("CODEX_HOME="+codexHome, "LLMGW_AGENTS_KEY="+tg.openaiKey)
			res := runAgent(t, s, env, bin, "exec", "--strict-config", "--skip-git-repo-check", "--ephemeral",
				"--color", "never", "--sandbox", "workspace-write", "-C", s.work, "-o", last, codexPrompt)
			if t.Failed() || res.exit != 0 {
				tg.describe(t)
				t.Fatalf("codex exited %d\nstdout:\n%s\nstderr:\n%s", res.exit, res.stdout, res.stderr)
			}
			b, err := os.ReadFile(last)
			if err != nil || !strings.Contains(string(b), "says: tool result received:") {
				t.Errorf("last message %q (%v): want the mock's answer to the tool result", b, err)
			}
			checkMarker(t, s)
			calls := checkToolLoop(t, mockCalls(t, rt.mock), rt.paths, "exec_command", rt.callPrefix)
			if tg.gatewayURL != "" {
				newest := tg.usage(t, tg.openaiKey, "endpoint=responses")
				if len(newest) == 0 || newest[0].Session == "" {
					t.Fatalf("no responses record with a session: %+v", newest)
				}
				tg.checkRecords(t, tg.openaiKey, "responses", newest[0].Session, rt, calls)
			}
			if t.Failed() || verbose() {
				tg.describe(t)
				t.Logf("stdout:\n%s\nstderr:\n%s", res.stdout, res.stderr)
			}
		})
	}
}
