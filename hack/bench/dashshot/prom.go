package main

import (
	"context"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// Series is one labelled series of a query's answer; an instant answer is a
// series of one point.
type Series struct {
	Labels map[string]string
	Points []Point
}

// Point is one sample; V is NaN where Prometheus answered NaN.
type Point struct {
	T time.Time
	V float64
}

// promClient asks a Prometheus server's HTTP API, as Grafana's data source
// does (POST, form-encoded).
type promClient struct {
	base string
	http *http.Client
}

func newPromClient(base string, timeout time.Duration) *promClient {
	return &promClient{base: strings.TrimRight(base, "/"), http: &http.Client{Timeout: timeout}}
}

// queryRange is GET /api/v1/query_range, with start and end aligned to the
// step as Grafana aligns them, so each point sits on a step boundary.
func (c *promClient) queryRange(ctx context.Context, expr string, t Timing) ([]Series, error) {
	step := t.Step.Seconds()
	start := math.Floor(float64(t.Start.UnixMilli())/1000/step) * step
	end := math.Ceil(float64(t.End.UnixMilli())/1000/step) * step
	form := url.Values{
		"query": {expr},
		"start": {strconv.FormatFloat(start, 'f', -1, 64)},
		"end":   {strconv.FormatFloat(end, 'f', -1, 64)},
		"step":  {strconv.FormatFloat(step, 'f', -1, 64)},
	}
	return c.do(ctx, "/api/v1/query_range", form)
}

// query is GET /api/v1/query at time at.
func (c *promClient) query(ctx context.Context, expr string, at time.Time) ([]Series, error) {
	form := url.Values{
		"query": {expr},
		"time":  {strconv.FormatFloat(float64(at.UnixMilli())/1000, 'f', -1, 64)},
	}
	return c.do(ctx, "/api/v1/query", form)
}

// apiAnswer is the Prometheus HTTP API's envelope.
type apiAnswer struct {
	Status    string `json:"status"`
	ErrorType string `json:"errorType"`
	Error     string `json:"error"`
	Data      struct {
		ResultType string         `json:"resultType"`
		Result     jsontext.Value `json:"result"`
	} `json:"data"`
}

// apiSeries is one element of a matrix or vector result.
type apiSeries struct {
	Metric map[string]string `json:"metric"`
	Values [][2]any          `json:"values"`
	Value  *[2]any           `json:"value"`
}

func (c *promClient) do(ctx context.Context, path string, form url.Values) ([]Series, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.base+path, strings.NewReader(form.Encode()))
	if err != nil {
		return nil, fmt.Errorf("prometheus %s: %w", path, err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, fmt.Errorf("prometheus %s: %w", path, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return nil, fmt.Errorf("prometheus %s: read: %w", path, err)
	}
	return parseAnswer(resp.StatusCode, body)
}

// parseAnswer decodes a query or query_range answer into series.
func parseAnswer(code int, body []byte) ([]Series, error) {
	var a apiAnswer
	if err := json.Unmarshal(body, &a); err != nil {
		return nil, fmt.Errorf("prometheus answered %d, not its API's JSON: %w", code, err)
	}
	if a.Status != "success" {
		return nil, fmt.Errorf("prometheus: %s: %s", a.ErrorType, a.Error)
	}
	switch a.Data.ResultType {
	case "matrix", "vector":
		var raw []apiSeries
		if err := json.Unmarshal(a.Data.Result, &raw); err != nil {
			return nil, fmt.Errorf("prometheus %s result: %w", a.Data.ResultType, err)
		}
		out := make([]Series, 0, len(raw))
		for _, r := range raw {
			s := Series{Labels: r.Metric}
			if r.Value != nil {
				r.Values = append(r.Values, *r.Value)
			}
			for _, v := range r.Values {
				p, err := parsePoint(v)
				if err != nil {
					return nil, err
				}
				s.Points = append(s.Points, p)
			}
			out = append(out, s)
		}
		return out, nil
	case "scalar":
		var v [2]any
		if err := json.Unmarshal(a.Data.Result, &v); err != nil {
			return nil, fmt.Errorf("prometheus scalar result: %w", err)
		}
		p, err := parsePoint(v)
		if err != nil {
			return nil, err
		}
		return []Series{{Labels: map[string]string{}, Points: []Point{p}}}, nil
	default:
		return nil, fmt.Errorf("prometheus: result type %q is not drawn", a.Data.ResultType)
	}
}

// parsePoint reads [unix seconds, "value"]; the value is a string so that
// NaN and ±Inf survive JSON.
func parsePoint(v [2]any) (Point, error) {
	ts, ok := v[0].(float64)
	if !ok {
		return Point{}, fmt.Errorf("prometheus: sample time %v is not a number", v[0])
	}
	s, ok := v[1].(string)
	if !ok {
		return Point{}, fmt.Errorf("prometheus: sample value %v is not a string", v[1])
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return Point{}, fmt.Errorf("prometheus: sample value %q: %w", s, err)
	}
	return Point{T: time.UnixMilli(int64(math.Round(ts * 1000))), V: f}, nil
}
