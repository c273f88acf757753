//go:build agents

package agents

import (
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

// TestClaudeCode runs Claude Code once in print mode: the mock asks for a
// Bash call, Claude Code runs it (Bash is allowed by flag: root may not
// use --dangerously-skip-permissions) and sends the result back, and the
// mock's answer to that is the final text.
func TestClaudeCode(t *testing.T) {
	bin := agentBin(t, "claude", "CLAUDE_CODE_VERSION")
	tg := startTarget(t)
	s := newSandbox(t)
	model := tg.anthropicModel
	env := s.env(
		"ANTHROPIC_BASE_URL="+tg.anthropicURL,
		"ANTHROPIC_API_KEY="+tg.anthropicKey,
		// Every model Claude Code may pick (main, background, subagents) is
		// one the target serves.
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
		"--model", model, "--allowedTools", "Bash", "--max-turns", "4")
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
	// chat-beta's primary is mock beta, same protocol: no translation.
	checkToolLoop(t, mockCalls(t, tg.mockBeta), []string{"/v1/messages"}, "Bash", "toolu_")
	if t.Failed() || verbose() {
		tg.describe(t)
		t.Logf("stdout:\n%s\nstderr:\n%s", res.stdout, res.stderr)
	}
}
