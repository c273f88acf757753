package main

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/prometheus/procfs"
)

// ballast is what the fake heap profile below allocates: memory the
// instrument, not the target, would add to an RSS read after it.
var ballast []byte

// procState reads RSS before it forces a GC through the heap profile, and
// at idle (gc false) asks for no heap profile at all.
func TestProcStateReadsRSSBeforeTheHeapProfile(t *testing.T) {
	var profiles atomic.Int32
	const ballastMB = 64
	mux := http.NewServeMux()
	mux.HandleFunc("/metrics", func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write([]byte("go_goroutines 7\ngo_memstats_heap_inuse_bytes 2e+06\n"))
	})
	mux.HandleFunc("/debug/pprof/heap", func(w http.ResponseWriter, _ *http.Request) {
		if profiles.Add(1) == 1 {
			ballast = make([]byte, ballastMB<<20)
			for i := range ballast { // resident, not just reserved
				ballast[i] = 1
			}
		}
	})
	srv := httptest.NewServer(mux)
	defer srv.Close()
	self, err := procfs.Self()
	if err != nil {
		t.Skipf("no /proc: %v", err)
	}
	p := &proc{name: "self", fs: self}
	tg := &target{mgmt: srv.URL}
	b := &bench{}
	before, err := p.mem()
	if err != nil {
		t.Fatal(err)
	}

	idle, err := b.procState(context.Background(), tg, p, nil, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	if n := profiles.Load(); n != 0 || idle.gc {
		t.Fatalf("idle: %d heap profiles asked for (gc %v), want none", n, idle.gc)
	}
	if idle.gor != 7 || idle.heap != 2e6/mb {
		t.Fatalf("idle: goroutines %d heap %.1f MB, want 7 and 2.0 from /metrics", idle.gor, idle.heap)
	}

	after, err := b.procState(context.Background(), tg, p, nil, true, nil)
	if err != nil {
		t.Fatal(err)
	}
	if n := profiles.Load(); n != 2 || !after.gc {
		t.Fatalf("after: %d heap profiles asked for (gc %v), want 2", n, after.gc)
	}
	// The ballast came after the RSS was read: it must not be in it.
	if grew := after.rss - float64(before.rss)/mb; grew > ballastMB/2 {
		t.Fatalf("RSS grew by %.1f MB across procState: it was read after the heap profile", grew)
	}
	now, err := p.mem()
	if err != nil {
		t.Fatal(err)
	}
	if float64(now.rss-before.rss)/mb < ballastMB/2 {
		t.Skipf("the ballast did not show in RSS (%d -> %d bytes): this test cannot tell the order here", before.rss, now.rss)
	}
}
