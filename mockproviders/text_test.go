package mockproviders

import (
	"strings"
	"testing"

	"github.com/llmgw/llmgw/api/tokens"
)

func TestSplitPieces(t *testing.T) {
	texts := []string{
		"alpha/m says: amber basalt cedar delta ember fjord garnet harbor",
		"one",
		"a b",
		"beta/m says: amber bas", // cut mid-word by a stop sequence
		"alpha/m says: amber ",   // stop sequence cut before a space
		"",
	}
	for _, text := range texts {
		for n := 1; n <= 12; n++ {
			pieces := splitPieces(text, n)
			if strings.Join(pieces, "") != text {
				t.Fatalf("%q/%d: pieces %q do not rebuild the text", text, n, pieces)
			}
			words := tokens.Count(text)
			if want := min(n, max(words, min(len(text), 1))); len(pieces) != want {
				t.Fatalf("%q/%d: %d pieces, want %d", text, n, len(pieces), want)
			}
			sum := 0
			for i, p := range pieces {
				if i > 0 && !strings.HasPrefix(p, " ") {
					t.Fatalf("%q/%d: piece %d %q does not start with a space", text, n, i, p)
				}
				if tokens.Count(p) == 0 {
					t.Fatalf("%q/%d: piece %d %q is empty of words", text, n, i, p)
				}
				sum += tokens.Count(p)
			}
			if sum != words {
				t.Fatalf("%q/%d: piece tokens %d != %d", text, n, sum, words)
			}
		}
	}
}

func chat(model string, msgs ...string) *chatRequest {
	r := &chatRequest{model: model}
	for i, m := range msgs {
		role := "user"
		if i%2 == 1 {
			role = "assistant"
		}
		r.messages = append(r.messages, message{role: role, texts: []string{m}})
	}
	return r
}

func TestBuildAnswer(t *testing.T) {
	a := buildAnswer(Alpha, chat("m1", "hello there"), 4)
	if !strings.HasPrefix(a.text, "alpha/m1 says: ") {
		t.Fatalf("text %q does not name flavor and model", a.text)
	}
	if n := tokens.Count(a.text); n < 10 || n > 18 || n != a.outputTokens {
		t.Fatalf("output tokens %d (count %d) outside 10..18", a.outputTokens, n)
	}
	if a.inputTokens != 2 || len(a.pieces) != 4 || a.finish != finishStop {
		t.Fatalf("answer %+v", a)
	}
	for _, w := range strings.Fields(a.text)[2:] {
		found := false
		for _, v := range words {
			found = found || v == w
		}
		if !found {
			t.Fatalf("word %q is not from the vocabulary", w)
		}
	}

	same := buildAnswer(Alpha, chat("m1", "hello there"), 4)
	if same.text != a.text || same.id != a.id {
		t.Fatal("same request, different answer")
	}
	if b := buildAnswer(Beta, chat("m1", "hello there"), 4); b.id == a.id || !strings.HasPrefix(b.text, "beta/m1 says: ") {
		t.Fatalf("beta answer %+v", b)
	}
	other := buildAnswer(Alpha, chat("m1", "hello  there!"), 4)
	if other.text == a.text {
		t.Fatal("different conversations gave the same words")
	}
	// Message boundaries matter: the same words split differently are another conversation.
	if x, y := buildAnswer(Alpha, chat("m", "ab", "c"), 4), buildAnswer(Alpha, chat("m", "a", "bc"), 4); x.text == y.text {
		t.Fatal("message boundaries do not change the answer")
	}
}

func TestBuildAnswerDoesNotEchoPrompt(t *testing.T) {
	prompt := "zanzibar quetzalcoatl xylophone"
	a := buildAnswer(Beta, chat("m", prompt), 4)
	for _, w := range strings.Fields(prompt) {
		if strings.Contains(a.text, w) {
			t.Fatalf("answer %q echoes %q", a.text, w)
		}
	}
}

func TestBuildAnswerChunksBeyondWords(t *testing.T) {
	small := buildAnswer(Alpha, chat("m", "x"), 1)
	big := buildAnswer(Alpha, chat("m", "x"), 50)
	if len(big.pieces) != 50 || tokens.Count(big.text) != 50 {
		t.Fatalf("50 chunks: %d pieces, %d words", len(big.pieces), tokens.Count(big.text))
	}
	if !strings.HasPrefix(big.text, small.text) {
		t.Fatal("more chunks should extend the same word sequence")
	}
}

func TestBuildAnswerLimits(t *testing.T) {
	base := buildAnswer(Alpha, chat("m", "q"), 4)
	all := strings.Fields(base.text)

	r := chat("m", "q")
	r.maxTokens = 5
	a := buildAnswer(Alpha, r, 4)
	if a.text != strings.Join(all[:5], " ") || a.finish != finishLength || a.outputTokens != 5 {
		t.Fatalf("max_tokens=5: %+v", a)
	}
	r.maxTokens = 1
	if a := buildAnswer(Alpha, r, 4); a.text != "alpha/m" || len(a.pieces) != 1 {
		t.Fatalf("max_tokens=1: %+v", a)
	}
	r.maxTokens = len(all)
	if a := buildAnswer(Alpha, r, 4); a.finish != finishStop || a.text != base.text {
		t.Fatalf("max_tokens = length should not truncate: %+v", a)
	}

	// Stop sequence at word 4 (index 3).
	r = chat("m", "q")
	r.stops = []string{"nothing-like-this", " " + all[3]}
	a = buildAnswer(Alpha, r, 4)
	if a.text != strings.Join(all[:3], " ") || a.finish != finishStopSequence || a.stopSequence != " "+all[3] {
		t.Fatalf("stop: %+v", a)
	}
	// A stop sequence past the token limit loses to max_tokens.
	r.maxTokens = 3
	if a := buildAnswer(Alpha, r, 4); a.finish != finishLength {
		t.Fatalf("stop beyond limit: %+v", a)
	}
	// A stop sequence at the very start leaves no text and no pieces.
	r = chat("m", "q")
	r.stops = []string{"alpha/"}
	if a := buildAnswer(Alpha, r, 4); a.text != "" || len(a.pieces) != 0 || a.outputTokens != 0 {
		t.Fatalf("stop at start: %+v", a)
	}
}

func TestStripLastUser(t *testing.T) {
	r := chat("m", "@mock alpha:status=500 stays in history", "ok", "hi\n@mock beta:chunks=2")
	r.messages[2].texts = append(r.messages[2].texts, "@mock alpha:chunks=3\nmore")
	lines := stripLastUser(r)
	if strings.Join(lines, "|") != "@mock beta:chunks=2|@mock alpha:chunks=3" {
		t.Fatalf("lines %q", lines)
	}
	if r.messages[0].texts[0] != "@mock alpha:status=500 stays in history" || r.messages[2].texts[0] != "hi\n" || r.messages[2].texts[1] != "more" {
		t.Fatalf("messages %+v", r.messages)
	}
}
