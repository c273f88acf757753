package main

import (
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// fakeProm is an httptest Prometheus API: query_range answers a matrix
// whose series carry the labels the query groups by (two series, values
// label-1 and label-2), query answers a vector. A query matching empty
// answers no series; one matching fail answers a bad_data error.
type fakeProm struct {
	*httptest.Server
	empty, fail *regexp.Regexp

	mu       sync.Mutex
	requests []fakeRequest
}

type fakeRequest struct {
	Path, Query, Step string
}

var groupBy = regexp.MustCompile(`by \(([^)]*)\)`)

func newFakeProm(t *testing.T, empty, fail string) *fakeProm {
	t.Helper()
	f := &fakeProm{empty: regexp.MustCompile(empty), fail: regexp.MustCompile(fail)}
	f.Server = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.Close)
	return f
}

func (f *fakeProm) seen() []fakeRequest {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]fakeRequest(nil), f.requests...)
}

func (f *fakeProm) serve(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	q := r.FormValue("query")
	f.mu.Lock()
	f.requests = append(f.requests, fakeRequest{r.URL.Path, q, r.FormValue("step")})
	f.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	if f.fail.String() != "" && f.fail.MatchString(q) {
		w.WriteHeader(http.StatusBadRequest)
		fmt.Fprint(w, `{"status":"error","errorType":"bad_data","error":"parse error: unexpected identifier"}`)
		return
	}
	var labels []string
	if m := groupBy.FindStringSubmatch(q); m != nil {
		for _, l := range strings.Split(m[1], ",") {
			if l = strings.TrimSpace(l); l != "le" && l != "" {
				labels = append(labels, l)
			}
		}
	}
	n := 2
	if len(labels) == 0 {
		n = 1
	}
	if f.empty.String() != "" && f.empty.MatchString(q) {
		n = 0
	}
	var series []string
	for i := range n {
		var ls []string
		for _, l := range labels {
			ls = append(ls, fmt.Sprintf("%q:%q", l, fmt.Sprintf("%s-%d", l, i+1)))
		}
		metric := "{" + strings.Join(ls, ",") + "}"
		switch r.URL.Path {
		case "/api/v1/query_range":
			start, _ := strconv.ParseFloat(r.FormValue("start"), 64)
			end, _ := strconv.ParseFloat(r.FormValue("end"), 64)
			step, _ := strconv.ParseFloat(r.FormValue("step"), 64)
			var vals []string
			for k, ts := 0, start; ts <= end; k, ts = k+1, ts+step {
				vals = append(vals, fmt.Sprintf(`[%s,"%s"]`, strconv.FormatFloat(ts, 'f', -1, 64), fakeValue(q, i, k)))
			}
			series = append(series, fmt.Sprintf(`{"metric":%s,"values":[%s]}`, metric, strings.Join(vals, ",")))
		case "/api/v1/query":
			ts := r.FormValue("time")
			series = append(series, fmt.Sprintf(`{"metric":%s,"value":[%s,"%s"]}`, metric, ts, fakeValue(q, i, 0)))
		default:
			http.NotFound(w, r)
			return
		}
	}
	typ := "matrix"
	if r.URL.Path == "/api/v1/query" {
		typ = "vector"
	}
	fmt.Fprintf(w, `{"status":"success","data":{"resultType":%q,"result":[%s]}}`, typ, strings.Join(series, ","))
}

// fakeValue is series i's value at step k: a breaker state (0, 1, 2)
// for breaker queries, else a positive wave.
func fakeValue(q string, i, k int) string {
	if strings.Contains(q, "breaker_state") {
		return strconv.Itoa([]int{0, 0, 0, 2, 2, 1, 0, 0}[(k/20+i)%8])
	}
	v := 0.5 + 0.4*math.Sin(float64(k)/15+float64(i)) + 0.1*float64(i)
	if k%97 == 50 {
		return "NaN"
	}
	return strconv.FormatFloat(v, 'f', -1, 64)
}
