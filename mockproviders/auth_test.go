package mockproviders

import (
	"strings"
	"testing"
)

func TestRequireKey(t *testing.T) {
	const key = "sk-provider-secret-123"
	tests := []struct {
		name string
		fl   Flavor
		hdr  map[string]string
		want int
	}{
		{"alpha right key", Alpha, map[string]string{"Authorization": "Bearer " + key}, 200},
		{"alpha scheme is case-insensitive", Alpha, map[string]string{"Authorization": "bearer " + key}, 200},
		{"alpha missing", Alpha, nil, 401},
		{"alpha wrong key", Alpha, map[string]string{"Authorization": "Bearer sk-wrong"}, 401},
		{"alpha key prefix only", Alpha, map[string]string{"Authorization": "Bearer sk-provider"}, 401},
		{"alpha wrong scheme", Alpha, map[string]string{"Authorization": "Basic " + key}, 401},
		{"alpha beta's header", Alpha, map[string]string{"x-api-key": key}, 401},
		{"beta right key", Beta, map[string]string{"x-api-key": key}, 200},
		{"beta missing", Beta, nil, 401},
		{"beta wrong key", Beta, map[string]string{"x-api-key": "sk-wrong"}, 401},
		{"beta alpha's header", Beta, map[string]string{"Authorization": "Bearer " + key}, 401},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := newMock(t, Options{Flavor: tt.fl, RequireKey: key})
			// The directive proves auth runs first: a rejected call never reaches faults.
			r := m.do(t, t.Context(), reqSpec{user: "hi\n@mock *:status=503"}.body(tt.fl), tt.hdr)
			if tt.want == 200 {
				if r.resp.StatusCode != 503 {
					t.Fatalf("status %d: %s", r.resp.StatusCode, r.body)
				}
				r = m.do(t, t.Context(), reqSpec{user: "hi"}.body(tt.fl), tt.hdr)
			}
			if r.resp.StatusCode != tt.want {
				t.Fatalf("status %d, want %d: %s", r.resp.StatusCode, tt.want, r.body)
			}
			if strings.Contains(string(r.body), key) {
				t.Fatal("response leaks the key")
			}
			if tt.want == 401 {
				typ, code, _ := errorType(t, tt.fl, r.body)
				if (tt.fl == Alpha && (typ != "invalid_request_error" || code != "invalid_api_key")) || (tt.fl == Beta && typ != "authentication_error") {
					t.Fatalf("401 body %s", r.body)
				}
				if c := m.calls(t); c.Total != 1 || c.ByStatus["401"] != 1 || len(c.ByFault) != 0 {
					t.Fatalf("calls %+v", c)
				}
			}
		})
	}
}
