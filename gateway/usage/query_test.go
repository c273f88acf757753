package usage

import (
	"encoding/base64"
	"errors"
	"testing"
)

// seed finishes n records for key and returns their ids, oldest first.
func seed(t *testing.T, l *Ledger, key string, n int) []string {
	t.Helper()
	ids := make([]string, n)
	for i := range ids {
		ids[i] = NewRequestID()
		l.Begin(Record{RequestID: ids[i]})
		if err := l.Finish(ctxT(t), finalRecord(ids[i], key)); err != nil {
			t.Fatal(err)
		}
	}
	return ids
}

func TestListScoping(t *testing.T) {
	l := openTest(t, Options{})
	a := seed(t, l, "key-a", 7)
	b := seed(t, l, "key-b", 5)
	seed(t, l, "", 3) // unauthenticated traffic belongs to nobody
	for key, want := range map[string][]string{"key-a": a, "key-b": b} {
		recs := listAll(t, l, key, 0)
		if len(recs) != len(want) {
			t.Fatalf("%s sees %d records, want %d", key, len(recs), len(want))
		}
		for i, r := range recs {
			if r.KeyID != key || r.RequestID != want[len(want)-1-i] {
				t.Fatalf("%s record %d = %s/%s, want %s newest first", key, i, r.KeyID, r.RequestID, want[len(want)-1-i])
			}
		}
	}
	if recs := listAll(t, l, "key-c", 0); len(recs) != 0 {
		t.Fatalf("unknown key sees %d records", len(recs))
	}
	if _, _, _, err := l.List(ctxT(t), "", 10, ""); !errors.Is(err, ErrInvalidRecord) {
		t.Fatalf("List with empty key: %v", err)
	}
	// key-b's cursor does not open key-a's records.
	_, next, _, err := l.List(ctxT(t), "key-b", 1, "")
	if err != nil {
		t.Fatal(err)
	}
	recs, _, _, err := l.List(ctxT(t), "key-a", 500, next)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range recs {
		if r.KeyID != "key-a" {
			t.Fatalf("key-a listing returned %s's record", r.KeyID)
		}
	}
}

func TestListPagination(t *testing.T) {
	l := openTest(t, Options{})
	ids := seed(t, l, "key-a", 12)
	var got []string
	cursor := ""
	for page := 0; ; page++ {
		recs, next, more, err := l.List(ctxT(t), "key-a", 5, cursor)
		if err != nil {
			t.Fatal(err)
		}
		wantLen, wantMore := 5, page < 2
		if page == 2 {
			wantLen = 2
		}
		if len(recs) != wantLen || more != wantMore || (next != "") != wantMore {
			t.Fatalf("page %d: %d records, more=%v next=%q", page, len(recs), more, next)
		}
		for _, r := range recs {
			got = append(got, r.RequestID)
		}
		if !more {
			break
		}
		cursor = next
	}
	for i, id := range got {
		if id != ids[len(ids)-1-i] {
			t.Fatalf("position %d: %s, want %s", i, id, ids[len(ids)-1-i])
		}
	}
	// Exactly one page's worth: has_more is false, not an empty next page.
	if recs, next, more, _ := l.List(ctxT(t), "key-a", 12, ""); len(recs) != 12 || more || next != "" {
		t.Fatalf("limit == count: %d records, more=%v next=%q", len(recs), more, next)
	}
	// Records finished after the first page and older than the cursor still
	// appear on later pages; in-progress ones do not appear at all.
	old := NewRequestID()
	l.Begin(Record{RequestID: old, KeyID: "key-a"})
	_, next, _, _ := l.List(ctxT(t), "key-a", 1, "")
	recs, _, _, err := l.List(ctxT(t), "key-a", 500, next)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range recs {
		if r.RequestID == old {
			t.Fatal("in_progress record listed")
		}
	}
	if len(listAll(t, l, "key-a", 0)) != 12 {
		t.Fatal("in_progress record counted in the listing")
	}
}

func TestListLimitClamp(t *testing.T) {
	l := openTest(t, Options{})
	seed(t, l, "key-a", 60)
	cases := map[int]int{0: 50, -5: 1, 1: 1, 10: 10, 500: 60, 100000: 60}
	for limit, want := range cases {
		recs, _, _, err := l.List(ctxT(t), "key-a", limit, "")
		if err != nil {
			t.Fatal(err)
		}
		if len(recs) != want {
			t.Errorf("limit %d: %d records, want %d", limit, len(recs), want)
		}
	}
	for in, want := range map[int]int{0: 50, -1: 1, 1: 1, 500: 500, 501: 500} {
		if got := ClampLimit(in); got != want {
			t.Errorf("ClampLimit(%d) = %d, want %d", in, got, want)
		}
	}
}

func TestBadCursor(t *testing.T) {
	l := openTest(t, Options{})
	seed(t, l, "key-a", 1)
	bad := []string{
		"!!!",
		"req_01", // not base64url of a versioned id
		base64.RawURLEncoding.EncodeToString([]byte{9, 'r', 'e', 'q'}),   // unknown version
		base64.RawURLEncoding.EncodeToString([]byte{1}),                  // version only
		base64.RawURLEncoding.EncodeToString([]byte{1, 'a', 0, 'b'}),     // control byte
		base64.StdEncoding.EncodeToString([]byte{1, 'r', 'e', 'q', '_'}), // padded
	}
	for _, c := range bad {
		if _, _, _, err := l.List(ctxT(t), "key-a", 10, c); !errors.Is(err, ErrBadCursor) {
			t.Errorf("cursor %q: %v, want ErrBadCursor", c, err)
		}
	}
	id := NewRequestID()
	if got, err := DecodeCursor(EncodeCursor(id)); err != nil || got != id {
		t.Fatalf("cursor round trip: %q, %v", got, err)
	}
}

func TestGetNotFound(t *testing.T) {
	l := openTest(t, Options{})
	if _, err := l.Get(ctxT(t), "req_missing"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Get missing: %v", err)
	}
}
