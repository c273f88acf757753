//go:build agents

package agents

import (
	"fmt"
	"strings"
	"testing"

	jsonv2 "github.com/go-json-experiment/json"
)

// claudePrompt asks, through the directive, for one Bash call that writes
// the marker and prints it; the answer after the tool result is text. The
// target * makes it apply whichever protocol serves the alias.
const claudePrompt = "Write the marker file, then say what you did.\n" +
	`@mock *:tool=Bash *:args={"command": "echo ` + marker + ` > marker.txt && cat marker.txt", "description": "Write and show the marker file"}`

// claudeResult is the part of `claude -p --output-format json` the test reads.
type claudeResult struct {
	Type     string `json:"type"`
	Subtype  string `json:"subtype"`
	IsError  bool   `json:"is_error"`
	NumTurns int    `json:"num_turns"`
	Result   string `json:"result"`
}

// TestClaudeCode runs Claude Code once in print mode through each of the
// target's routes: the mock asks for a Bash call, Claude Code runs it
// (Bash is allowed by flag: root may not use --dangerously-skip-permissions)
// and sends the result back, and the mock's answer to that is the final
// text. Through the gateway, the session's records are checked too.
func TestClaudeCode(t *testing.T) {
	bin := agentBin(t, "claude", "CLAUDE_CODE_VERSION")
	tg := startTarget(t)
	for i, rt := range tg.claude {
		t.Run(rt.model, func(t *testing.T) {
			tg.resetMocks(t)
			s := newSandbox(t)
			model := rt.model
			session := fmt.Sprintf("0c1a5dc0-0000-4000-8000-%012d", i+1)
			env := s.env(
				"ANTHROPIC_BASE_URL="+tg.anthropicURL,
				"ANTHROPIC_API_KEY="+tg.anthropicKey,
				// Every model Claude Code may pick (main, background, subagents)
				// is one the target serves.
				"ANTHROPIC_MODEL="+model,
				"ANTHROPIC_DEFAULT_OPUS_MODEL="+model,
				"ANTHROPIC_DEFAULT_SONNET_MODEL="+model,
				"ANTHROPIC_DEFAULT_HAIKU_MODEL="+model,
				"ANTHROPIC_SMALL_FAST_MODEL="+model,
				"CLAUDE_CODE_SUBAGENT_MODEL="+model,
				"CLAUDE_CONFIG_DIR="+s.home+"/.claude",
				// No telemetry, error reports, update checks or other calls home.
				"DISABLE_TELEMETRY=1",
				"DISABLE_ERROR_REPORTING=1",
				"DISABLE_AUTOUPDATER=1",
				"DISABLE_BUG_COMMAND=1",
				"DISABLE_NON_ESSENTIAL_MODEL_CALLS=1",
				"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1",
				"CLAUDE_CODE_DISABLE_TERMINAL_TITLE=1",
			)
			res := runAgent(t, s, env, bin, "-p", claudePrompt, "--output-format", "json",
				"--model", model, "--session-id", session, "--allowedTools", "Bash", "--max-turns", "4")
			if t.Failed() || res.exit != 0 {
				tg.describe(t)
				t.Fatalf("claude exited %d\nstdout:\n%s\nstderr:\n%s", res.exit, res.stdout, res.stderr)
			}
			var out claudeResult
			if err := jsonv2.Unmarshal([]byte(strings.TrimSpace(res.stdout)), &out); err != nil {
				t.Errorf("stdout is not the JSON result: %v\n%s", err, res.stdout)
			}
			if out.IsError || out.Subtype != "success" || out.NumTurns != 2 ||
				!strings.Contains(out.Result, "says: tool result received: "+marker) {
				t.Errorf("result %+v: want success after 2 turns with the mock's answer to the tool result", out)
			}
			checkMarker(t, s)
			calls := checkToolLoop(t, mockCalls(t, rt.mock), rt.paths, "Bash", rt.callPrefix)
			tg.checkRecords(t, tg.anthropicKey, "messages", session, rt, calls)
			if t.Failed() || verbose() {
				tg.describe(t)
				t.Logf("stdout:\n%s\nstderr:\n%s", res.stdout, res.stderr)
			}
		})
	}
}
