package source

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/llmgw/llmgw/api/snapshot"
	"github.com/llmgw/llmgw/test/testutil"
)

// The assembler on an in-memory store: what the informer would hold.

type assemblerHarness struct {
	*assembler
	clock   time.Time
	applied []*snapshot.Snapshot
	errs    []error
}

func newHarness(t *testing.T) *assemblerHarness {
	t.Helper()
	h := &assemblerHarness{clock: time.Unix(1000, 0)}
	h.assembler = &assembler{namespace: "ns", head: snapshot.DefaultConfigMapName,
		store:  cache.NewStore(cache.MetaNamespaceKeyFunc),
		apply:  func(s *snapshot.Snapshot) { h.applied = append(h.applied, s) },
		reject: func(err error) { h.errs = append(h.errs, err) },
		log:    slog.New(slog.NewTextHandler(io.Discard, nil)),
		now:    func() time.Time { return h.clock }, waitReport: 30 * time.Second,
		parts: map[string]decodedPart{}}
	return h
}

// build returns the ConfigMaps of s with small shards (several of them).
func build(t *testing.T, s *snapshot.Snapshot) ([]*corev1.ConfigMap, *corev1.ConfigMap) {
	t.Helper()
	parts, head, err := testutil.SnapshotConfigMaps("ns", snapshot.DefaultConfigMapName, s, 2<<10)
	if err != nil {
		t.Fatal(err)
	}
	return parts, head
}

func (h *assemblerHarness) put(t *testing.T, objs ...*corev1.ConfigMap) {
	t.Helper()
	for _, o := range objs {
		if err := h.store.Update(o); err != nil {
			t.Fatal(err)
		}
	}
}

func withKeys(n int) *snapshot.Snapshot {
	s := testutil.ScaleSnapshot(n, 3)
	return s
}

func (h *assemblerHarness) lastVersion(t *testing.T) string {
	t.Helper()
	if len(h.applied) == 0 {
		t.Fatal("nothing applied")
	}
	s := h.applied[len(h.applied)-1].Clone()
	if _, err := snapshot.Encode(s); err != nil {
		t.Fatalf("assembled snapshot does not seal: %v", err)
	}
	return s.Version
}

func TestAssemblerAppliesOnlyComplete(t *testing.T) {
	h := newHarness(t)
	s := withKeys(200)
	parts, head := build(t, s)
	if len(parts) < 4 {
		t.Fatalf("want several parts, got %d", len(parts))
	}
	// The head first (as a watch may deliver it): nothing to apply yet.
	h.put(t, head)
	h.sync()
	for _, p := range parts[:len(parts)-1] {
		h.put(t, p)
		h.sync()
	}
	if len(h.applied) != 0 || len(h.errs) != 0 {
		t.Fatalf("applied %d, rejected %v with a part missing", len(h.applied), h.errs)
	}
	h.put(t, parts[len(parts)-1])
	h.sync()
	if got := h.lastVersion(t); got != s.Version || len(h.applied) != 1 {
		t.Fatalf("applied %d, version %s, want %s", len(h.applied), got, s.Version)
	}
	// The same head again (a resync, another part's event): nothing new.
	h.sync()
	if len(h.applied) != 1 {
		t.Fatalf("the same head was applied %d times", len(h.applied))
	}
}

// TestAssemblerDecodesOnlyNewParts: after one key changes, only its shard is
// read; the other parts come from the cache (here their data is gone from
// the store, so reading them would fail).
func TestAssemblerDecodesOnlyNewParts(t *testing.T) {
	h := newHarness(t)
	s := withKeys(300)
	parts, head := build(t, s)
	h.put(t, parts...)
	h.put(t, head)
	h.sync()
	old := map[string]bool{}
	for _, p := range parts {
		old[p.Name] = true
		blank := p.DeepCopy()
		blank.BinaryData = nil
		h.put(t, blank)
	}
	s.Keys[17].Disabled = !s.Keys[17].Disabled
	parts2, head2 := build(t, s)
	fresh := 0
	for _, p := range parts2 {
		if !old[p.Name] {
			fresh++
			h.put(t, p)
		}
	}
	h.put(t, head2)
	h.sync()
	if fresh != 1 || len(h.applied) != 2 || len(h.errs) != 0 {
		t.Fatalf("%d new parts, %d applied, errors %v", fresh, len(h.applied), h.errs)
	}
	if got := h.lastVersion(t); got != s.Version {
		t.Fatalf("version %s, want %s", got, s.Version)
	}
	if len(h.parts) != len(parts2) {
		t.Fatalf("cache holds %d parts, the head names %d", len(h.parts), len(parts2))
	}
}

// TestAssemblerReportsALongWait: a part that stays missing (or damaged) is
// reported once after waitReport, and the snapshot applies when it comes.
func TestAssemblerReportsALongWait(t *testing.T) {
	for _, damage := range []string{"missing", "corrupt"} {
		t.Run(damage, func(t *testing.T) {
			h := newHarness(t)
			s := withKeys(100)
			parts, head := build(t, s)
			victim := parts[2]
			for _, p := range parts {
				if p != victim {
					h.put(t, p)
				}
			}
			if damage == "corrupt" {
				bad := victim.DeepCopy()
				bad.BinaryData[snapshot.PartKey] = parts[1].BinaryData[snapshot.PartKey]
				h.put(t, bad)
			}
			h.put(t, head)
			h.sync()
			h.clock = h.clock.Add(29 * time.Second)
			h.sync()
			if len(h.errs) != 0 {
				t.Fatalf("reported before the wait was over: %v", h.errs)
			}
			h.clock = h.clock.Add(2 * time.Second)
			h.sync()
			h.sync()
			if len(h.errs) != 1 || !strings.Contains(h.errs[0].Error(), victim.Name) || len(h.applied) != 0 {
				t.Fatalf("want one report naming %s, got %v (applied %d)", victim.Name, h.errs, len(h.applied))
			}
			h.put(t, victim)
			h.sync()
			if h.lastVersion(t) != s.Version {
				t.Fatal("not applied once the part came")
			}
		})
	}
}

func TestAssemblerRejects(t *testing.T) {
	s := withKeys(50)
	cases := []struct {
		name string
		edit func(parts []*corev1.ConfigMap, head *corev1.ConfigMap)
		want string
	}{
		{"head without its key", func(_ []*corev1.ConfigMap, head *corev1.ConfigMap) { head.Data = nil }, "has no"},
		{"head not JSON", func(_ []*corev1.ConfigMap, head *corev1.ConfigMap) { head.Data[snapshot.HeadKey] = "{" }, "snapshot head"},
		// Hand-made parts with a matching hash: not a key shard; a key
		// invalid on its own (checked when its shard is decoded); a key
		// naming an alias no part has (checked when the parts are sealed).
		{"part that decodes to garbage", replaceShard(`{"keys":[{"nope":1}]}`), "unknown field"},
		{"key invalid on its own", replaceShard(`{"keys":[{"id":"ID","prefix":"lgw_k1aaaaaaaa","hash":"sha256:00","models":["*"]}]}`), "hash must be"},
		{"key naming no alias", replaceShard(`{"keys":[{"id":"ID","prefix":"lgw_k1aaaaaaaa","hash":"sha256:` + strings.Repeat("ab", 32) + `","models":["gone"]}]}`),
			`alias "gone" does not exist`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h := newHarness(t)
			parts, head := build(t, s)
			c.edit(parts, head)
			h.put(t, parts...)
			h.put(t, head)
			h.sync()
			h.sync() // once per broken object, not per event
			if len(h.errs) != 1 || !strings.Contains(h.errs[0].Error(), c.want) || len(h.applied) != 0 {
				t.Fatalf("errors %v (want one with %q), applied %d", h.errs, c.want, len(h.applied))
			}
		})
	}
}

// replaceShard puts raw in place of the first key shard, with the head
// naming its hash, as a hand-made part would be; "ID" in raw becomes a key
// id that belongs in that shard.
func replaceShard(raw string) func(parts []*corev1.ConfigMap, head *corev1.ConfigMap) {
	return func(parts []*corev1.ConfigMap, head *corev1.ConfigMap) {
		hd, err := snapshot.ParseHead([]byte(head.Data[snapshot.HeadKey]))
		if err != nil {
			panic(err)
		}
		id := "k0"
		for i := 1; snapshot.ShardOf(id, len(hd.Keys)) != 0; i++ {
			id = fmt.Sprintf("k%d", i)
		}
		raw := strings.ReplaceAll(raw, `"ID"`, strconv.Quote(id))
		hd.Keys[0].SHA256 = sha([]byte(raw))
		parts[1].BinaryData[snapshot.PartKey] = gz([]byte(raw))
		head.Data[snapshot.HeadKey] = marshal(hd)
	}
}

// TestAssemblerHeadDeletedAndBack: deleting the head is reported; putting a
// good head back (the running version) is handed on again, which clears the
// report in the sink.
func TestAssemblerHeadDeletedAndBack(t *testing.T) {
	h := newHarness(t)
	parts, head := build(t, withKeys(20))
	h.put(t, parts...)
	h.put(t, head)
	h.sync()
	if err := h.store.Delete(head); err != nil {
		t.Fatal(err)
	}
	h.sync()
	h.sync()
	if len(h.errs) != 1 || !strings.Contains(h.errs[0].Error(), "deleted") {
		t.Fatalf("errors %v", h.errs)
	}
	h.put(t, head)
	h.sync()
	if len(h.applied) != 2 {
		t.Fatalf("restored head applied %d times in all, want 2", len(h.applied))
	}
}

func sha(raw []byte) string {
	sum := sha256.Sum256(raw)
	return hex.EncodeToString(sum[:])
}

func gz(raw []byte) []byte {
	var b bytes.Buffer
	zw := gzip.NewWriter(&b)
	_, _ = zw.Write(raw)
	_ = zw.Close()
	return b.Bytes()
}

func marshal(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}
