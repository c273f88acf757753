package peers

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-json-experiment/json"

	"github.com/llmgw/llmgw/api/money"
	"github.com/llmgw/llmgw/gateway/usage"
)

const testToken = "peer-token-for-tests"

func quietLog(t testing.TB) *slog.Logger {
	return slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelWarn}))
}

func testCtx(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// openLedger opens (or reopens) the ledger file at path.
func openLedger(t testing.TB, path string) *usage.Ledger {
	t.Helper()
	l, err := usage.Open(testCtx(t), path, usage.Options{Logger: quietLog(t)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Close() })
	return l
}

// seed writes n final records of key through Begin and Finish, every field
// set, and returns them as the ledger stores them.
func seed(t testing.TB, l *usage.Ledger, key string, n int) []usage.Record {
	t.Helper()
	ctx := testCtx(t)
	recs := make([]usage.Record, n)
	for i := range recs {
		id := usage.NewRequestID()
		if err := l.Begin(usage.Record{RequestID: id, KeyID: key}); err != nil {
			t.Fatal(err)
		}
		r := usage.Record{
			RequestID: id, ClientRequestID: fmt.Sprintf("c-%d", i), Endpoint: usage.EndpointChat,
			Session: "s-" + key, Group: "g-" + key, Owners: map[string]string{"team": "t" + key},
			KeyID: key, KeyFingerprint: "fp" + key, Alias: "chat-alpha", Provider: "alpha", ProviderModel: "alpha-large",
			Status: usage.StatusSuccess, HTTPStatus: 200, Fallbacks: i % 2,
			Attempts:    []usage.Attempt{{Provider: "alpha", Model: "alpha-large", Outcome: usage.OutcomeOK, StatusCode: 200, LatencyMs: int64(i)}},
			Stream:      i%3 == 0,
			InputTokens: 10 + i, OutputTokens: 20 + i, CachedInputTokens: i, ReasoningTokens: i / 2,
			Cost: money.Picos(1_000_000_007 * (i + 1)), Currency: "USD", LatencyMs: int64(5 + i),
		}
		if err := l.Finish(ctx, r); err != nil {
			t.Fatal(err)
		}
		got, err := l.Get(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		recs[i] = got
	}
	return recs
}

func recIDs(recs []usage.Record) []string {
	out := make([]string, len(recs))
	for i, r := range recs {
		out[i] = r.RequestID
	}
	return out
}

// all is every final record of l, in request id order.
func all(t testing.TB, l *usage.Ledger) []usage.Record {
	t.Helper()
	recs, err := l.ExportBatch(testCtx(t), "", 100000)
	if err != nil {
		t.Fatal(err)
	}
	return recs
}

// sorted are recs in request id order.
func sorted(recs ...[]usage.Record) []usage.Record {
	out := slices.Concat(recs...)
	slices.SortFunc(out, func(a, b usage.Record) int { return strings.Compare(a.RequestID, b.RequestID) })
	return out
}

// receiver is a gateway's management port serving RecordsPath over a real
// ledger; wrap, if not nil, stands in front of the handler.
func receiver(t testing.TB, wrap func(http.Handler) http.Handler) (*usage.Ledger, *httptest.Server) {
	t.Helper()
	l := openLedger(t, filepath.Join(t.TempDir(), "receiver.db"))
	mux := http.NewServeMux()
	h := ImportHandler(l, testToken, quietLog(t))
	if wrap != nil {
		h = wrap(h)
	}
	mux.Handle(RecordsPath, h)
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return l, srv
}

// wantNoMarker fails unless l has no hand-off marker.
func wantNoMarker(t testing.TB, l *usage.Ledger) {
	t.Helper()
	if to, ok, err := l.Handoff(testCtx(t)); err != nil || ok {
		t.Fatalf("marker = %q %v %v, want none", to, ok, err)
	}
}

func TestHandOffMovesEveryRecordOnce(t *testing.T) {
	rl, srv := receiver(t, nil)
	own := seed(t, rl, "k", 2)
	sl := openLedger(t, filepath.Join(t.TempDir(), "sender.db"))
	sent := seed(t, sl, "k", 23)
	if err := sl.Begin(usage.Record{RequestID: usage.NewRequestID(), KeyID: "k"}); err != nil {
		t.Fatal(err) // an in_progress record is not handed off (the caller drains first)
	}

	st, err := HandOff(testCtx(t), sl, HandoffConfig{To: srv.URL + "/", Token: testToken, Batch: 5, Logger: quietLog(t)})
	if err != nil {
		t.Fatal(err)
	}
	if st != (HandoffStats{Sent: 23, Added: 23, Batches: 5}) {
		t.Fatalf("stats %+v, want 23 sent and added in 5 batches", st)
	}
	if left := all(t, sl); len(left) != 0 {
		t.Fatalf("sender still has %d final records", len(left))
	}
	wantNoMarker(t, sl)
	if got, want := all(t, rl), sorted(own, sent); !reflect.DeepEqual(got, want) {
		t.Fatalf("receiver holds\n%+v\nwant\n%+v", got, want)
	}

	// Nothing left: a second hand-off sends nothing and succeeds.
	st, err = HandOff(testCtx(t), sl, HandoffConfig{To: srv.URL, Token: testToken, Logger: quietLog(t)})
	if err != nil || st != (HandoffStats{}) {
		t.Fatalf("second hand-off: %+v, %v", st, err)
	}
}

// dropAnswer is a transport that delivers every request but, on the one
// numbered drop, throws the answer away after the receiver committed, and
// runs then (if not nil): a lost answer, or the sender killed right there.
type dropAnswer struct {
	drop int32
	n    atomic.Int32
	then func()
}

func (d *dropAnswer) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := http.DefaultTransport.RoundTrip(req)
	if err != nil || d.n.Add(1) != d.drop {
		return resp, err
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close()
	if d.then != nil {
		d.then()
	}
	return nil, errors.New("connection reset after the receiver answered")
}

// A lost answer is retried: the receiver already has the batch, and adds
// none of it twice.
func TestHandOffLostAnswerIsRetried(t *testing.T) {
	rl, srv := receiver(t, nil)
	sl := openLedger(t, filepath.Join(t.TempDir(), "sender.db"))
	sent := seed(t, sl, "k", 12)
	client := &http.Client{Transport: &dropAnswer{drop: 2}}
	st, err := HandOff(testCtx(t), sl, HandoffConfig{To: srv.URL, Token: testToken, Client: client, Batch: 5, Logger: quietLog(t)})
	if err != nil {
		t.Fatal(err)
	}
	if st != (HandoffStats{Sent: 12, Added: 7, Batches: 3}) || st.Present() != 5 {
		t.Fatalf("stats %+v, want 12 sent, 7 added (the retried batch of 5 was there)", st)
	}
	if got := all(t, rl); !reflect.DeepEqual(got, sorted(sent)) {
		t.Fatalf("receiver holds %v, want %v", recIDs(got), recIDs(sent))
	}
}

// The sender dies after the receiver committed a batch and before it
// deleted it. The replay, after a restart (the ledger reopened from disk,
// the marker read back), goes to the same receiver and ends with every
// record there exactly once.
func TestHandOffReplayAfterCrashHalfWay(t *testing.T) {
	rl, srv := receiver(t, nil)
	own := seed(t, rl, "k", 3)
	path := filepath.Join(t.TempDir(), "sender.db")
	sl := openLedger(t, path)
	sent := seed(t, sl, "k", 17)
	wantSum := summary(t, []*usage.Ledger{sl, rl})

	ctx, kill := context.WithCancel(testCtx(t))
	client := &http.Client{Transport: &dropAnswer{drop: 2, then: kill}}
	st, err := HandOff(ctx, sl, HandoffConfig{To: srv.URL, Token: testToken, Client: client, Batch: 5, Logger: quietLog(t)})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("interrupted hand-off: %+v, %v; want context.Canceled", st, err)
	}
	if st.Sent != 5 {
		t.Fatalf("before the crash %d records were acknowledged, want 5", st.Sent)
	}
	if err := sl.Close(); err != nil {
		t.Fatal(err)
	}

	sl = openLedger(t, path)
	to, ok, err := sl.Handoff(testCtx(t))
	if err != nil || !ok || to != srv.URL {
		t.Fatalf("marker after restart = %q %v %v, want %s", to, ok, err, srv.URL)
	}
	// Not to another receiver: the batch at the first would be doubled.
	if _, err := HandOff(testCtx(t), sl, HandoffConfig{To: "http://elsewhere:9090", Token: testToken, Logger: quietLog(t)}); !errors.Is(err, ErrHandoffElsewhere) {
		t.Fatalf("replay to another receiver: %v, want ErrHandoffElsewhere", err)
	}
	st, err = HandOff(testCtx(t), sl, HandoffConfig{To: to, Token: testToken, Batch: 5, Logger: quietLog(t)})
	if err != nil {
		t.Fatal(err)
	}
	if st.Sent != 12 || st.Added != 7 {
		t.Fatalf("replay stats %+v, want the 12 left sent, 7 of them new", st)
	}
	if left := all(t, sl); len(left) != 0 {
		t.Fatalf("sender still has %d records", len(left))
	}
	wantNoMarker(t, sl)
	if got := all(t, rl); !reflect.DeepEqual(got, sorted(own, sent)) {
		t.Fatalf("receiver holds %v, want %v", recIDs(got), recIDs(sorted(own, sent)))
	}
	if got := summary(t, []*usage.Ledger{rl}); !reflect.DeepEqual(got, wantSum) {
		t.Fatalf("receiver totals %+v, want both ledgers' %+v", got, wantSum)
	}
}

// summary adds up key k's totals over ls.
func summary(t testing.TB, ls []*usage.Ledger) usage.Totals {
	t.Helper()
	var sum usage.Totals
	for _, l := range ls {
		part, err := l.Summary(testCtx(t), "k", time.Now().Add(-time.Hour), time.Now().Add(time.Hour))
		if err != nil {
			t.Fatal(err)
		}
		if err := sum.Add(part); err != nil {
			t.Fatal(err)
		}
	}
	return sum
}

func TestHandOffRefusesAMarkerNamingAnotherReceiver(t *testing.T) {
	var posts atomic.Int32
	_, srv := receiver(t, func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { posts.Add(1); h.ServeHTTP(w, r) })
	})
	sl := openLedger(t, filepath.Join(t.TempDir(), "sender.db"))
	seed(t, sl, "k", 3)
	const first = "http://llmgw-gateway-0.llmgw-gateway-peers:9090"
	if err := sl.SetHandoff(testCtx(t), first); err != nil {
		t.Fatal(err)
	}
	_, err := HandOff(testCtx(t), sl, HandoffConfig{To: srv.URL, Token: testToken, Logger: quietLog(t)})
	if !errors.Is(err, ErrHandoffElsewhere) || !strings.Contains(err.Error(), first) {
		t.Fatalf("HandOff = %v, want ErrHandoffElsewhere naming %s", err, first)
	}
	if posts.Load() != 0 || len(all(t, sl)) != 3 {
		t.Fatalf("records were sent (%d requests) or lost", posts.Load())
	}
	if to, ok, _ := sl.Handoff(testCtx(t)); !ok || to != first {
		t.Fatalf("marker changed to %q %v", to, ok)
	}
}

// A hand-off that never got a batch to its receiver (nothing listens, or
// the receiver refused it) keeps every record and takes its marker back,
// so the operator may pick another receiver; a refusal is not retried.
func TestHandOffThatReachedNobodyReleasesTheReceiver(t *testing.T) {
	var posts atomic.Int32
	_, srv := receiver(t, func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { posts.Add(1); h.ServeHTTP(w, r) })
	})
	for _, tc := range []struct {
		name, to, token string
		timeout         time.Duration
		wantErr         string
	}{
		{"nothing listens", "http://127.0.0.1:1", testToken, 500 * time.Millisecond, "connection refused"},
		{"wrong token", srv.URL, "not-the-token", time.Minute, "HTTP 401"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sl := openLedger(t, filepath.Join(t.TempDir(), "sender.db"))
			seed(t, sl, "k", 4)
			ctx, cancel := context.WithTimeout(testCtx(t), tc.timeout)
			defer cancel()
			before := posts.Load()
			_, err := HandOff(ctx, sl, HandoffConfig{To: tc.to, Token: tc.token, Logger: quietLog(t)})
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("HandOff = %v, want an error with %q", err, tc.wantErr)
			}
			if tc.to == srv.URL && posts.Load()-before != 1 {
				t.Fatalf("%d requests, want 1 (a refusal is final)", posts.Load()-before)
			}
			if n := len(all(t, sl)); n != 4 {
				t.Fatalf("sender has %d records, want its 4", n)
			}
			wantNoMarker(t, sl)
		})
	}
}

// A receiver that cannot commit for a while (503) or finds a request too
// large (413) is handled: the batch is tried again, or split.
func TestHandOffRetriesAndSplits(t *testing.T) {
	var unavailable atomic.Int32
	unavailable.Store(2)
	rl, srv := receiver(t, func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if unavailable.Add(-1) >= 0 {
				http.Error(w, "ledger busy", http.StatusServiceUnavailable)
				return
			}
			if r.ContentLength > 3000 {
				http.Error(w, "too large", http.StatusRequestEntityTooLarge)
				return
			}
			h.ServeHTTP(w, r)
		})
	})
	sl := openLedger(t, filepath.Join(t.TempDir(), "sender.db"))
	sent := seed(t, sl, "k", 20)
	st, err := HandOff(testCtx(t), sl, HandoffConfig{To: srv.URL, Token: testToken, Batch: 20, Logger: quietLog(t)})
	if err != nil {
		t.Fatal(err)
	}
	if st.Sent != 20 || st.Added != 20 || st.Batches < 4 {
		t.Fatalf("stats %+v, want 20 sent in smaller batches", st)
	}
	if got := all(t, rl); !reflect.DeepEqual(got, sorted(sent)) {
		t.Fatalf("receiver holds %v", recIDs(got))
	}
}

func TestImportHandlerAnswers(t *testing.T) {
	good := func(t *testing.T) string {
		src := openLedger(t, filepath.Join(t.TempDir(), "src.db"))
		recs := seed(t, src, "k", 2)
		b, err := json.Marshal(handoffBody{Records: []HandoffRecord{recordOf(recs[0]), recordOf(recs[1])}})
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	inProgress := func(t *testing.T) string {
		s := good(t)
		return strings.Replace(s, `"status":"success"`, `"status":"in_progress"`, 1)
	}
	for _, tc := range []struct {
		name     string
		method   string
		auth     string
		body     func(t *testing.T) string
		want     int
		wantBody string
	}{
		{"no token", "POST", "", good, 401, ""},
		{"wrong token", "POST", "Bearer nope", good, 401, ""},
		{"GET", "GET", "Bearer " + testToken, nil, 405, ""},
		{"not JSON", "POST", "Bearer " + testToken, func(*testing.T) string { return "records" }, 400, ""},
		{"no records member", "POST", "Bearer " + testToken, func(*testing.T) string { return `{}` }, 400, ""},
		{"records null", "POST", "Bearer " + testToken, func(*testing.T) string { return `{"records":null}` }, 400, ""},
		{"unknown member", "POST", "Bearer " + testToken, func(*testing.T) string {
			return `{"records":[{"request_id":"req_1","status":"success","created_at_us":1,"finished_at_us":2,"mood":"happy"}]}`
		}, 400, ""},
		{"a string for a number", "POST", "Bearer " + testToken, func(*testing.T) string {
			return `{"records":[{"request_id":"req_1","status":"success","created_at_us":"1","finished_at_us":2}]}`
		}, 400, ""},
		{"one record in progress", "POST", "Bearer " + testToken, inProgress, 400, ""},
		{"empty batch", "POST", "Bearer " + testToken, func(*testing.T) string { return `{"records":[]}` }, 200, `{"received":0,"added":0}`},
		{"a good batch", "POST", "Bearer " + testToken, good, 200, `{"received":2,"added":2}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rl, srv := receiver(t, nil)
			var body io.Reader
			if tc.body != nil {
				body = strings.NewReader(tc.body(t))
			}
			code, got := do(t, srv, tc.method, tc.auth, body)
			if code != tc.want || (tc.wantBody != "" && got != tc.wantBody) {
				t.Fatalf("%s → %d %s, want %d %s", tc.name, code, got, tc.want, tc.wantBody)
			}
			if n := len(all(t, rl)); tc.want != 200 && n != 0 {
				t.Fatalf("a refused request wrote %d records", n)
			}
		})
	}
}

// do sends one request to srv's RecordsPath; it returns the status and the
// body, trimmed.
func do(t *testing.T, srv *httptest.Server, method, auth string, body io.Reader) (int, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(testCtx(t), method, srv.URL+RecordsPath, body)
	if err != nil {
		t.Fatal(err)
	}
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, strings.TrimSpace(string(b))
}

// zeros is an endless body of spaces.
type zeros struct{}

func (zeros) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = ' '
	}
	return len(p), nil
}

func TestImportHandlerBodyLimit(t *testing.T) {
	rl, srv := receiver(t, nil)
	code, _ := do(t, srv, "POST", "Bearer "+testToken, io.LimitReader(zeros{}, MaxRecordsBody+1))
	if code != http.StatusRequestEntityTooLarge {
		t.Fatalf("a body past the limit → %d, want 413", code)
	}
	if n := len(all(t, rl)); n != 0 {
		t.Fatalf("wrote %d records", n)
	}
}

// A ledger that cannot commit (here: closed, as during shutdown) answers
// 503, which the sender tries again.
func TestImportHandlerUnavailableLedger(t *testing.T) {
	rl, srv := receiver(t, nil)
	if err := rl.Close(); err != nil {
		t.Fatal(err)
	}
	src := openLedger(t, filepath.Join(t.TempDir(), "src.db"))
	b, err := json.Marshal(handoffBody{Records: []HandoffRecord{recordOf(seed(t, src, "k", 1)[0])}})
	if err != nil {
		t.Fatal(err)
	}
	if code, body := do(t, srv, "POST", "Bearer "+testToken, strings.NewReader(string(b))); code != http.StatusServiceUnavailable {
		t.Fatalf("closed ledger → %d %s, want 503", code, body)
	}
}

// The wire keeps every field of a record exactly, under its documented
// name, and times and cost as integers.
func TestHandoffRecordRoundTrip(t *testing.T) {
	l := openLedger(t, filepath.Join(t.TempDir(), "src.db"))
	r := seed(t, l, "k", 3)[2]
	r.ErrorType = "upstream_error"
	b, err := json.Marshal(recordOf(r))
	if err != nil {
		t.Fatal(err)
	}
	for _, member := range []string{
		`"request_id":"` + r.RequestID + `"`,
		fmt.Sprintf(`"cost_picos":%d`, r.Cost),
		fmt.Sprintf(`"created_at_us":%d`, r.CreatedAt.UnixMicro()),
		fmt.Sprintf(`"finished_at_us":%d`, r.FinishedAt.UnixMicro()),
		`"owners":{"team":"tk"}`, `"group":"g-k"`, `"error_type":"upstream_error"`,
	} {
		if !strings.Contains(string(b), member) {
			t.Errorf("encoded record %s lacks %s", b, member)
		}
	}
	var h HandoffRecord
	if err := json.Unmarshal(b, &h); err != nil {
		t.Fatal(err)
	}
	if got := h.usage(); !reflect.DeepEqual(got, r) {
		t.Fatalf("round trip\n%+v\nwant\n%+v", got, r)
	}
}

// Hand-offs from several leaving replicas to one receiver at once, with the
// receiver serving its own traffic, each land once.
func TestHandOffFromManySenders(t *testing.T) {
	rl, srv := receiver(t, nil)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var want []usage.Record
	for i := range 3 {
		sl := openLedger(t, filepath.Join(t.TempDir(), fmt.Sprintf("sender-%d.db", i)))
		recs := seed(t, sl, "k", 15)
		mu.Lock()
		want = append(want, recs...)
		mu.Unlock()
		wg.Go(func() {
			if _, err := HandOff(testCtx(t), sl, HandoffConfig{To: srv.URL, Token: testToken, Batch: 4, Logger: quietLog(t)}); err != nil {
				t.Error(err)
			}
		})
	}
	own := seed(t, rl, "k", 5)
	wg.Wait()
	if got := all(t, rl); !reflect.DeepEqual(got, sorted(want, own)) {
		t.Fatalf("receiver holds %d records, want %d", len(got), len(want)+len(own))
	}
}

// forgetful is a ledger whose Forget deletes nothing.
type forgetful struct{ *usage.Ledger }

func (forgetful) Forget(context.Context, []string) error { return nil }

// A ledger that keeps what it was told to delete ends the hand-off with an
// error instead of sending the same batch for ever.
func TestHandOffStopsWhenForgetDeletesNothing(t *testing.T) {
	_, srv := receiver(t, nil)
	sl := openLedger(t, filepath.Join(t.TempDir(), "sender.db"))
	seed(t, sl, "k", 3)
	st, err := HandOff(testCtx(t), forgetful{sl}, HandoffConfig{To: srv.URL, Token: testToken, Logger: quietLog(t)})
	if err == nil || !strings.Contains(err.Error(), "still here after it was deleted") || st.Batches != 1 {
		t.Fatalf("HandOff = %+v, %v; want an error after one batch", st, err)
	}
	// The batch may be at the receiver: the marker stays.
	if to, ok, _ := sl.Handoff(testCtx(t)); !ok || to != srv.URL {
		t.Fatalf("marker = %q %v, want %s", to, ok, srv.URL)
	}
}
