package server

import (
	"encoding/json"
	"slices"
	"testing"

	"github.com/llmgw/llmgw/gateway/peers"
	"github.com/llmgw/llmgw/gateway/usage"
)

func TestMergeUsage(t *testing.T) {
	rec := func(id string) usage.Record { return usage.Record{RequestID: id, KeyID: "key-a", Status: "ok"} }
	page := func(name string, more bool, ids ...string) peers.Page {
		p := peers.Page{Replica: name, HasMore: more}
		for _, id := range ids {
			p.Data = append(p.Data, json.RawMessage(`{"request_id":"`+id+`"}`))
		}
		return p
	}
	for _, tc := range []struct {
		name      string
		local     []usage.Record
		localMore bool
		pages     []peers.Page
		limit     int
		wantIDs   []string
		wantMore  bool
	}{
		{"interleaved, newest first", []usage.Record{rec("req_5"), rec("req_2")}, false,
			[]peers.Page{page("gw-1", false, "req_4", "req_1"), page("gw-2", false, "req_3")}, 10,
			[]string{"req_5", "req_4", "req_3", "req_2", "req_1"}, false},
		{"cut at the limit: more, cursor at the last shown", []usage.Record{rec("req_5"), rec("req_2")}, false,
			[]peers.Page{page("gw-1", false, "req_4", "req_1")}, 2,
			[]string{"req_5", "req_4"}, true},
		{"a replica with more pages: more", nil, false,
			[]peers.Page{page("gw-1", true, "req_9")}, 5, []string{"req_9"}, true},
		{"local more: more", []usage.Record{rec("req_7")}, true, nil, 5, []string{"req_7"}, true},
		{"the same id twice is shown once", []usage.Record{rec("req_3")}, false,
			[]peers.Page{page("gw-1", false, "req_3", "req_2")}, 5, []string{"req_3", "req_2"}, false},
		{"nothing anywhere", nil, false, []peers.Page{page("gw-1", false)}, 5, nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, err := mergeUsage(tc.local, tc.localMore, tc.pages, tc.limit)
			if err != nil {
				t.Fatal(err)
			}
			var ids []string
			for _, raw := range out.Data {
				var h struct {
					RequestID string `json:"request_id"`
				}
				if err := json.Unmarshal(raw, &h); err != nil {
					t.Fatal(err)
				}
				ids = append(ids, h.RequestID)
			}
			if !slices.Equal(ids, tc.wantIDs) || out.HasMore != tc.wantMore {
				t.Fatalf("ids %v more %v; want %v more %v", ids, out.HasMore, tc.wantIDs, tc.wantMore)
			}
			wantCursor := ""
			if tc.wantMore && len(ids) > 0 {
				wantCursor = usage.EncodeCursor(ids[len(ids)-1])
			}
			if out.NextCursor != wantCursor {
				t.Fatalf("next_cursor %q, want %q", out.NextCursor, wantCursor)
			}
		})
	}
}
