package server

import (
	"encoding/json"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/llmgw/llmgw/api/money"
	"github.com/llmgw/llmgw/gateway/peers"
	"github.com/llmgw/llmgw/gateway/usage"
)

func TestSummaryRange(t *testing.T) {
	now := time.Date(2026, 5, 17, 10, 30, 0, 0, time.FixedZone("x", 3600))
	for _, tc := range []struct {
		query    string
		from, to string
		param    string // the refused parameter
	}{
		{"", "2026-05-01T00:00:00Z", "2026-05-17T09:30:00Z", ""},
		{"to=2026-03-15T00:00:00Z", "2026-03-01T00:00:00Z", "2026-03-15T00:00:00Z", ""},
		{"from=2026-05-10T00:00:00%2B02:00", "2026-05-09T22:00:00Z", "2026-05-17T09:30:00Z", ""},
		{"from=2025-05-17T09:30:00Z&to=2026-05-17T09:30:00Z", "2025-05-17T09:30:00Z", "2026-05-17T09:30:00Z", ""},
		{"from=2025-05-15T09:30:00Z&to=2026-05-17T09:30:00Z", "", "", "from"}, // 367 days
		{"from=2026-05-17T09:30:01Z", "", "", "to"},
		{"from=2026-05-01", "", "", "from"},
		{"to=now", "", "", "to"},
	} {
		q, _ := url.ParseQuery(tc.query)
		from, to, aerr := summaryRange(q, now)
		if tc.param != "" {
			if aerr == nil || aerr.param != tc.param {
				t.Errorf("%q: error %+v, want one about %s", tc.query, aerr, tc.param)
			}
			continue
		}
		if aerr != nil || from.Format(time.RFC3339) != tc.from || to.Format(time.RFC3339) != tc.to {
			t.Errorf("%q: %s..%s %v; want %s..%s", tc.query, from, to, aerr, tc.from, tc.to)
		}
	}
}

func TestSummaryJSONCurrencies(t *testing.T) {
	from, to := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(2026, 2, 1, 0, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name  string
		costs map[string]money.Picos
		want  string
	}{
		{"nothing priced", nil, `"cost":"0","currency":"","costs":[]`},
		{"one currency", map[string]money.Picos{"USD": 1_500_000}, `"cost":"0.0000015","currency":"USD","costs":[{"currency":"USD","cost":"0.0000015"}]`},
		{"a change of currency", map[string]money.Picos{"USD": 2, "EUR": money.PicosPerUnit},
			`"cost":null,"currency":null,"costs":[{"currency":"EUR","cost":"1"},{"currency":"USD","cost":"0.000000000002"}]`},
	} {
		b, err := json.Marshal(toSummaryJSON("key-a", from, to, usage.Totals{Requests: 1, Costs: tc.costs}))
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(b), tc.want) {
			t.Errorf("%s: %s lacks %s", tc.name, b, tc.want)
		}
	}
}

func TestAddPeerTotals(t *testing.T) {
	total := usage.Totals{Requests: 1, InputTokens: 5, Costs: map[string]money.Picos{"USD": 7}}
	body, _ := json.Marshal(toPeerTotals(usage.Totals{Requests: 2, InputTokens: 3, CachedInputTokens: 1,
		OutputTokens: 4, ReasoningTokens: 2, Costs: map[string]money.Picos{"USD": 1 << 40}}))
	if err := addPeerTotals(&total, []peers.SummaryPage{{Replica: "gw-1", Body: body}}); err != nil {
		t.Fatal(err)
	}
	if total.Requests != 3 || total.InputTokens != 8 || total.CachedInputTokens != 1 || total.OutputTokens != 4 ||
		total.ReasoningTokens != 2 || total.Costs["USD"] != 7+1<<40 {
		t.Fatalf("total %+v", total)
	}
	if err := addPeerTotals(&total, []peers.SummaryPage{{Replica: "gw-2", Body: json.RawMessage(`{"cost_picos":{"USD":9223372036854775807}}`)}}); err == nil {
		t.Fatal("an overflowing sum was accepted")
	}
	if err := addPeerTotals(&total, []peers.SummaryPage{{Replica: "gw-2", Body: json.RawMessage(`[`)}}); err == nil {
		t.Fatal("a malformed peer answer was accepted")
	}
}
