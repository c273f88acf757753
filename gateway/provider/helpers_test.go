package provider

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/llmgw/llmgw/gateway/translate"
)

const testCredential = "sk-test-Cr3dential-9f8e7d"

// captured is one request as the upstream saw it.
type captured struct {
	method, path string
	header       http.Header
	body         string
}

// upstream starts a server that records each request and answers with respond.
func upstream(t *testing.T, respond http.HandlerFunc) (*httptest.Server, <-chan captured) {
	t.Helper()
	ch := make(chan captured, 64)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		select {
		case ch <- captured{r.Method, r.URL.Path, r.Header.Clone(), string(b)}:
		default:
		}
		respond(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv, ch
}

func reply(status int, contentType, body string, headers ...string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		for i := 0; i+1 < len(headers); i += 2 {
			w.Header().Set(headers[i], headers[i+1])
		}
		if contentType != "" {
			w.Header().Set("Content-Type", contentType)
		}
		w.WriteHeader(status)
		io.WriteString(w, body)
	}
}

func newAdapter(t *testing.T, protocol, baseURL string, mod ...func(*Config)) Adapter {
	t.Helper()
	cfg := Config{Name: "up-" + protocol, Protocol: protocol, BaseURL: baseURL, Credential: testCredential}
	for _, m := range mod {
		m(&cfg)
	}
	a, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if c, ok := a.(IdleCloser); ok {
		t.Cleanup(c.CloseIdleConnections)
	}
	return a
}

func asError(t *testing.T, err error) *Error {
	t.Helper()
	var e *Error
	if !errors.As(err, &e) {
		t.Fatalf("error %T %v is not *provider.Error", err, err)
	}
	return e
}

// assertNoLeak checks every text reachable from err: its message, its fields and
// each error along its unwrap chain.
func assertNoLeak(t *testing.T, err error, secrets ...string) {
	t.Helper()
	var texts []string
	for e := err; e != nil; e = errors.Unwrap(e) {
		texts = append(texts, e.Error(), fmt.Sprintf("%+v", e), fmt.Sprintf("%#v", e))
		if pe, ok := e.(*Error); ok {
			texts = append(texts, pe.Message, pe.Type)
		}
	}
	for _, s := range secrets {
		if s == "" {
			continue
		}
		for _, txt := range texts {
			if strings.Contains(txt, s) {
				t.Fatalf("error text leaks %q: %s", s, txt)
			}
		}
	}
}

func leakCandidates(srv *httptest.Server) []string {
	return []string{testCredential, srv.URL, strings.TrimPrefix(srv.URL, "http://")}
}

// relayed is what a test keeps of a chunk: Data is valid only until the
// stream's next call.
type relayed struct {
	data   string
	text   string
	commit bool
	usage  *translate.Usage
}

// drain reads a stream to its end.
func drain(s Stream) ([]relayed, error) {
	var out []relayed
	for {
		c, err := s.Next()
		if err != nil {
			return out, err
		}
		out = append(out, relayed{string(c.Data), c.Text, c.Commit, c.Usage})
	}
}

// textOf is what the chunks say, joined.
func textOf(chunks []relayed) string {
	var b strings.Builder
	for _, c := range chunks {
		b.WriteString(c.text)
	}
	return b.String()
}

// usageOf is the last usage the chunks reported.
func usageOf(chunks []relayed) *translate.Usage {
	var u *translate.Usage
	for _, c := range chunks {
		if c.usage != nil {
			u = c.usage
		}
	}
	return u
}

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// testMeta is what the gateway would tell a translator: the alias, and a
// caller who asked for the usage chunk.
func testMeta() *translate.Meta {
	return &translate.Meta{Alias: "alias", ID: "chatcmpl-req", Created: 1700000000, IncludeUsage: true}
}

// decoder is the translator of a stream of protocol, as the gateway makes one.
func decoder(protocol string) translate.ChatStream {
	return translate.Chat(protocol).Stream(testMeta())
}

// chatBody is a caller's request in protocol, written by its translator
// (model "m-1"), with extra members the caller sent.
func chatBody(t testing.TB, protocol string, stream bool, extra ...string) [][]byte {
	t.Helper()
	members := append([]string{`"model":"alias"`, `"messages":[{"role":"user","content":"Hello"}]`}, extra...)
	if stream {
		members = append(members, `"stream":true`)
	}
	body := []byte("{" + strings.Join(members, ",") + "}")
	segs, err := translate.Chat(protocol).Request(&translate.ChatRequest{Body: body, Stream: stream, IncludeUsage: stream}, "m-1")
	if err != nil {
		t.Fatal(err)
	}
	return segs
}

// joined is a segmented body in one slice, as it goes on the wire.
func joined(body [][]byte) []byte { return bytes.Join(body, nil) }

// literal is a body of one segment.
func literal(s string) [][]byte { return [][]byte{[]byte(s)} }

// complete makes one JSON call, its answer read by protocol's translator.
func complete(ctx context.Context, a Adapter, body [][]byte) (*translate.Answer, error) {
	var ans *translate.Answer
	err := a.Complete(ctx, Call{Op: OpChat, Body: body}, func(raw []byte) error {
		var err error
		ans, err = translate.Chat(a.Protocol()).Answer(raw, testMeta())
		return err
	})
	return ans, err
}

// startStream opens a stream read by protocol's translator.
func startStream(ctx context.Context, a Adapter, body [][]byte) (Stream, error) {
	return a.Stream(ctx, Call{Op: OpChat, Body: body}, decoder(a.Protocol()))
}

// baseOf is the adapter's implementation.
func baseOf(t testing.TB, a Adapter) *base {
	t.Helper()
	b, ok := a.(*base)
	if !ok {
		t.Fatalf("adapter %T", a)
	}
	return b
}

// The protocols' stream events, as providers send them.

const oaiPre = `data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"m-1","choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]}` + "\n\n"

func oaiText(s string) string {
	return `data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"m-1","choices":[{"index":0,"delta":{"content":"` + s + `"},"finish_reason":null}]}` + "\n\n"
}

const (
	oaiFinish     = `data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"m-1","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}` + "\n\n"
	oaiUsageChunk = `data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"m-1","choices":[],"usage":{"prompt_tokens":5,"completion_tokens":2,"total_tokens":7}}` + "\n\n"
	oaiDone       = "data: [DONE]\n\n"
	oaiAnswer     = `{"id":"c1","object":"chat.completion","created":1,"model":"m-1","choices":[{"index":0,"message":{"role":"assistant","content":"Hi there"},"finish_reason":"stop"}],"usage":{"prompt_tokens":3,"completion_tokens":2,"total_tokens":5}}`
)

func antEv(name, data string) string { return "event: " + name + "\ndata: " + data + "\n\n" }

var (
	antStart      = antEv("message_start", `{"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","content":[],"usage":{"input_tokens":5,"output_tokens":1}}}`)
	antBlockStart = antEv("content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`)
	antPing       = antEv("ping", `{"type": "ping"}`)
	antBlockStop  = antEv("content_block_stop", `{"type":"content_block_stop","index":0}`)
	antStop       = antEv("message_stop", `{"type":"message_stop"}`)
	antAnswer     = `{"id":"msg_1","type":"message","role":"assistant","model":"m-1","content":[{"type":"text","text":"Hi there"}],"stop_reason":"end_turn","usage":{"input_tokens":3,"output_tokens":2}}`
)

func antText(s string) string {
	return antEv("content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"`+s+`"}}`)
}

func antDelta(reason string, out int) string {
	return antEv("message_delta", `{"type":"message_delta","delta":{"stop_reason":"`+reason+`","stop_sequence":null},"usage":{"output_tokens":`+strconv.Itoa(out)+`}}`)
}

// streamBody is a whole, well-formed stream of protocol saying text.
func streamBody(protocol string, text ...string) string {
	var b strings.Builder
	if protocol == ProtocolAnthropic {
		b.WriteString(antStart + antBlockStart)
		for _, s := range text {
			b.WriteString(antText(s))
		}
		b.WriteString(antBlockStop + antDelta("end_turn", 2) + antStop)
		return b.String()
	}
	b.WriteString(oaiPre)
	for _, s := range text {
		b.WriteString(oaiText(s))
	}
	b.WriteString(oaiFinish + oaiUsageChunk + oaiDone)
	return b.String()
}

// answerBody is a JSON answer of protocol saying "Hi there".
func answerBody(protocol string) string {
	if protocol == ProtocolAnthropic {
		return antAnswer
	}
	return oaiAnswer
}

var protocols = []string{ProtocolOpenAI, ProtocolAnthropic}
