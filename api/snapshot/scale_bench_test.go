package snapshot_test

import (
	"fmt"
	"testing"

	"github.com/llmgw/llmgw/api/snapshot"
	"github.com/llmgw/llmgw/test/testutil"
)

// The scale benchmarks: 50,000 keys and 1,000 aliases (testutil.ScaleSnapshot,
// realistic random key hashes). Run with
//
//	go test ./api/snapshot -run '^$' -bench Scale -benchtime 5x
//
// docs/BENCHMARK.md records the numbers and the machine.

const scaleKeys, scaleAliases = 50_000, 1_000

var scaleCache = map[int]*snapshot.Snapshot{}

func scaleSealed(b *testing.B, keys int) (*snapshot.Snapshot, []byte) {
	b.Helper()
	s, ok := scaleCache[keys]
	if !ok {
		s = testutil.ScaleSnapshot(keys, scaleAliases)
		scaleCache[keys] = s
	}
	body, err := snapshot.Encode(s)
	if err != nil {
		b.Fatal(err)
	}
	return s, body
}

// BenchmarkScaleEncode is what the controller pays per compile and the
// gateway per reload (server.Apply seals what it is given): normalize,
// validate, canonical encoding, version.
func BenchmarkScaleEncode(b *testing.B) {
	s, body := scaleSealed(b, scaleKeys)
	b.ReportMetric(float64(len(body)), "canonical-bytes")
	testutil.CPUPerOp(b, func() {
		if _, err := snapshot.Encode(s); err != nil {
			b.Fatal(err)
		}
	})
}

// BenchmarkScaleParse is the file mode's reload (llmgw gateway --snapshot).
func BenchmarkScaleParse(b *testing.B) {
	_, body := scaleSealed(b, scaleKeys)
	testutil.CPUPerOp(b, func() {
		if _, err := snapshot.Parse(body); err != nil {
			b.Fatal(err)
		}
	})
}

// BenchmarkScaleSplit: the controller's first publication (every part
// compressed) and a one-key change (one shard compressed).
func BenchmarkScaleSplit(b *testing.B) {
	s, body := scaleSealed(b, scaleKeys)
	b.Run("all-parts", func(b *testing.B) {
		var h snapshot.Head
		var parts []snapshot.Part
		testutil.CPUPerOp(b, func() {
			var err error
			if h, parts, err = snapshot.Split(s, snapshot.SplitOptions{Head: "llmgw-snapshot"}); err != nil {
				b.Fatal(err)
			}
		})
		total, largest := 0, 0
		for _, p := range parts {
			total += p.Bytes
			largest = max(largest, p.Bytes)
		}
		b.ReportMetric(float64(len(h.Keys)), "key-shards")
		b.ReportMetric(float64(total), "compressed-bytes")
		b.ReportMetric(float64(total)/scaleKeys, "compressed-bytes/key")
		b.ReportMetric(float64(largest), "largest-part-bytes")
		b.ReportMetric(float64(len(body))/float64(total), "ratio-to-canonical")
	})
	b.Run("one-key-changed", func(b *testing.B) {
		prev, _, err := snapshot.Split(s, snapshot.SplitOptions{Head: "llmgw-snapshot"})
		if err != nil {
			b.Fatal(err)
		}
		written := 0
		i := 0
		testutil.CPUPerOp(b, func() {
			i++
			s.Keys[i%len(s.Keys)].RateLimit.RPM++ // sealed snapshots only differ in content
			s.Version = fmt.Sprintf("sha256:bench%d", i)
			h, parts, err := snapshot.Split(s, snapshot.SplitOptions{Head: "llmgw-snapshot", Previous: &prev})
			if err != nil {
				b.Fatal(err)
			}
			prev = h
			for _, p := range parts {
				written += len(p.Data)
			}
		})
		b.ReportMetric(float64(written)/float64(b.N), "written-bytes/op")
	})
}

// BenchmarkScaleAssemble is the gateway's side before server.Apply: a cold
// start decodes every part; a one-key change decodes one shard (the others
// are cached by hash) and concatenates.
func BenchmarkScaleAssemble(b *testing.B) {
	s, _ := scaleSealed(b, scaleKeys)
	h, parts, err := snapshot.Split(s, snapshot.SplitOptions{Head: "llmgw-snapshot"})
	if err != nil {
		b.Fatal(err)
	}
	decode := func(refs []snapshot.PartRef) (*snapshot.Snapshot, [][]snapshot.Key) {
		var config *snapshot.Snapshot
		shards := make([][]snapshot.Key, len(h.Keys))
		for _, ref := range refs {
			for _, p := range parts {
				if p.Name != ref.Name {
					continue
				}
				raw, err := snapshot.ReadPart(ref, p.Data)
				if err != nil {
					b.Fatal(err)
				}
				if ref == h.Config {
					if config, err = snapshot.ParseConfigPart(raw); err != nil {
						b.Fatal(err)
					}
					continue
				}
				for i := range h.Keys {
					if h.Keys[i] == ref {
						if shards[i], err = snapshot.ParseKeyPart(raw); err != nil {
							b.Fatal(err)
						}
					}
				}
			}
		}
		return config, shards
	}
	b.Run("cold", func(b *testing.B) {
		testutil.CPUPerOp(b, func() {
			config, shards := decode(h.Parts())
			if _, err := snapshot.Assemble(&h, config, shards); err != nil {
				b.Fatal(err)
			}
		})
	})
	b.Run("one-shard", func(b *testing.B) {
		config, shards := decode(h.Parts())
		testutil.CPUPerOp(b, func() {
			_, one := decode(h.Keys[7:8])
			shards[7] = one[7]
			if _, err := snapshot.Assemble(&h, config, shards); err != nil {
				b.Fatal(err)
			}
		})
	})
}
