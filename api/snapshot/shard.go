package snapshot

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"strings"

	"github.com/go-json-experiment/json"
)

// Sharded delivery. A snapshot is published as parts, each in its own
// immutable ConfigMap, and a head that names them:
//
//   - the config part: the snapshot without its keys (providers, aliases,
//     limits and any field added later), as compact JSON;
//   - N key shards: {"keys":[...]} with the keys whose id hashes to the shard
//     (ShardOf), in id order; N is a power of two sized so that a shard holds
//     about ShardBytes of JSON;
//   - the head (HeadKey of the ConfigMap DefaultConfigMapName): the version
//     the parts assemble to and, per part, its ConfigMap name and the SHA-256
//     of its uncompressed JSON.
//
// A part's name ends in its content hash, so a part never changes: a new key
// writes one new shard and a new head, and the gateway assembles a snapshot
// only from a head and parts whose hashes match it. Parts are gzip-compressed
// (binaryData PartKey): key hashes are random hex and compress about 4.8:1
// as a whole (50 bytes a key), the JSON around them much better.

// Bounds of the sharding.
const (
	// MaxPartBytes bounds one part's compressed data: the API server refuses
	// a ConfigMap whose data exceeds 1 MiB, and the margin covers metadata
	// and keeps every object far from etcd's request limit.
	MaxPartBytes = 700 << 10
	// MaxPartRawBytes bounds what a reader decompresses from one part, so a
	// hostile ConfigMap cannot make a gateway inflate gigabytes.
	MaxPartRawBytes = 64 << 20
	// DefaultShardBytes is the uncompressed JSON a key shard aims at: about
	// 1,000 keys, 50 KB compressed, so that one changed key sends each
	// gateway one small object and not megabytes.
	DefaultShardBytes = 256 << 10
	// MaxKeyShards bounds the number of key shards (and the head's size).
	MaxKeyShards = 1024
)

// Head is the entry point of a published snapshot.
type Head struct {
	// Version is the version of the snapshot the parts assemble to.
	Version string `json:"version"`
	// Config is the part with everything but the keys.
	Config PartRef `json:"config"`
	// Keys are the key shards; Keys[i] holds the keys with ShardOf(id,
	// len(Keys)) == i. Their number is a power of two.
	Keys []PartRef `json:"keys"`
}

// PartRef names one part.
type PartRef struct {
	// Name is the part's ConfigMap.
	Name string `json:"name"`
	// SHA256 is the lowercase hex SHA-256 of the part's uncompressed JSON.
	SHA256 string `json:"sha256"`
	// Keys is how many keys the part holds (0 for the config part).
	Keys int `json:"keys"`
	// Bytes is the size of its compressed data.
	Bytes int `json:"bytes"`
}

// Part is a part to store: its reference and its compressed data.
type Part struct {
	PartRef
	// Data is nil for a part that the previous head names already (it
	// exists, and nothing needs to be compressed again).
	Data []byte
}

// Parts lists the head's parts, config first.
func (h *Head) Parts() []PartRef {
	return append([]PartRef{h.Config}, h.Keys...)
}

// SplitOptions say where and how to split.
type SplitOptions struct {
	// Head is the head ConfigMap's name; part names start with it.
	Head string
	// Previous is the head published now, if any. Its parts are not
	// compressed again, and its shard count is kept while the size allows
	// (a count change moves most keys, so it is not done for one key).
	Previous *Head
	// ShardBytes is the uncompressed JSON a key shard aims at (0:
	// DefaultShardBytes).
	ShardBytes int
	// KeyPiece, when set, gives a key's compact JSON as CompactKey returns
	// it, kept by the caller from an earlier split (the controller's
	// compile memo), so that unchanged keys are not encoded again; nil, or
	// a nil result, encodes the key now.
	KeyPiece func(*Key) []byte
}

// CompactKey is k's compact JSON as a key shard holds it.
func CompactKey(k *Key) ([]byte, error) {
	return encodeCompact(nil, k)
}

// TooLargeError says that a snapshot cannot be split into parts that fit a
// ConfigMap. It is returned before anything is written.
type TooLargeError struct {
	// Part is "config" (providers, aliases, limits: those are not sharded)
	// or "keys".
	Part string
	// Bytes is the compressed size of the part that did not fit; Limit is
	// MaxPartBytes.
	Bytes, Limit int
	// Shards is how many key shards were tried.
	Shards int
}

func (e *TooLargeError) Error() string {
	if e.Part == "keys" {
		return fmt.Sprintf("the snapshot's keys do not fit %d shards: one shard is %d bytes compressed, over the %d-byte limit of a ConfigMap part",
			e.Shards, e.Bytes, e.Limit)
	}
	return fmt.Sprintf("the snapshot's providers and aliases are %d bytes compressed, over the %d-byte limit of a ConfigMap part (they are not sharded)",
		e.Bytes, e.Limit)
}

// ShardOf is the key shard of a key id among n (a power of two): FNV-1a, so
// every reader and writer agrees without configuration.
func ShardOf(id string, n int) int {
	h := fnv.New32a()
	h.Write([]byte(id))
	return int(h.Sum32() & uint32(n-1))
}

// maxHeadNameLen leaves room for "-k1023-" and a 12-digit hash in a part's
// name (a DNS subdomain, at most 253 characters).
const maxHeadNameLen = 253 - len("-k1023-") - partHashLen

const partHashLen = 12

func partName(head, slot, sum string) string {
	return head + "-" + slot + "-" + sum[:partHashLen]
}

// Split cuts s into parts. s must be sealed by Encode (normalized, valid,
// versioned). Only parts that the previous head does not name are
// compressed; a part over MaxPartBytes doubles the number of key shards, and
// a TooLargeError says that no split fits.
func Split(s *Snapshot, o SplitOptions) (Head, []Part, error) {
	if o.Head == "" || len(o.Head) > maxHeadNameLen {
		return Head{}, nil, fmt.Errorf("snapshot ConfigMap name %q: 1 to %d characters are needed to name its parts", o.Head, maxHeadNameLen)
	}
	if s.Version == "" {
		return Head{}, nil, errors.New("splitting a snapshot without a version: Encode it first")
	}
	target := o.ShardBytes
	if target <= 0 {
		target = DefaultShardBytes
	}
	known := map[string]PartRef{}
	prevShards := 0
	if o.Previous != nil {
		for _, r := range o.Previous.Parts() {
			known[r.Name] = r
		}
		prevShards = len(o.Previous.Keys)
	}
	part := func(slot string, raw []byte, keys int) (Part, error) {
		sum := sha256.Sum256(raw)
		p := Part{PartRef: PartRef{SHA256: hex.EncodeToString(sum[:]), Keys: keys}}
		p.Name = partName(o.Head, slot, p.SHA256)
		if r, ok := known[p.Name]; ok && r.SHA256 == p.SHA256 {
			p.Bytes = r.Bytes
			return p, nil
		}
		var err error
		if p.Data, err = compress(raw); err != nil {
			return p, err
		}
		p.Bytes = len(p.Data)
		return p, nil
	}

	config := *s
	config.Version, config.Keys = "", nil
	raw, err := encodeCompact(nil, &config)
	if err != nil {
		return Head{}, nil, fmt.Errorf("encoding the config part: %w", err)
	}
	cp, err := part("c", raw, 0)
	if err != nil {
		return Head{}, nil, err
	}
	if cp.Bytes > MaxPartBytes {
		return Head{}, nil, &TooLargeError{Part: "config", Bytes: cp.Bytes, Limit: MaxPartBytes}
	}

	// The shard count comes from the size of the keys' JSON, known only once
	// they are encoded: start from the previous count (or an estimate), and
	// encode again in the rare round where the count has to move. floor
	// keeps a count doubled for size from shrinking back.
	n, floor := prevShards, 1
	if n == 0 {
		n = shardCount(len(s.Keys)*estimatedKeyBytes, 0, target)
	}
	for {
		raws, total, err := encodeShards(s.Keys, n, o.KeyPiece)
		if err != nil {
			return Head{}, nil, err
		}
		if want := max(shardCount(total, n, target), floor); want != n {
			n = want
			continue
		}
		h := Head{Version: s.Version, Config: cp.PartRef, Keys: make([]PartRef, n)}
		for _, k := range s.Keys {
			h.Keys[ShardOf(k.ID, n)].Keys++
		}
		parts := make([]Part, n)
		largest := 0
		for i, raw := range raws {
			if parts[i], err = part(fmt.Sprintf("k%d", i), raw, h.Keys[i].Keys); err != nil {
				return Head{}, nil, err
			}
			h.Keys[i] = parts[i].PartRef
			largest = max(largest, parts[i].Bytes)
		}
		if largest > MaxPartBytes {
			if n*2 > MaxKeyShards {
				return Head{}, nil, &TooLargeError{Part: "keys", Bytes: largest, Limit: MaxPartBytes, Shards: n}
			}
			n, floor = n*2, n*2
			continue
		}
		return h, append([]Part{cp}, parts...), nil
	}
}

// estimatedKeyBytes guesses a key's JSON size before any is encoded (a
// typical key is 200 to 300 bytes); a wrong guess costs one more encoding.
const estimatedKeyBytes = 250

// encodeShards writes each shard's JSON, {"keys":[...]} with the keys that
// belong to it in the order given; total is the size of all of them.
func encodeShards(keys []Key, n int, piece func(*Key) []byte) ([][]byte, int, error) {
	raws := make([][]byte, n)
	for i := range raws {
		raws[i] = append(make([]byte, 0, len(keys)*estimatedKeyBytes/n+64), `{"keys":[`...)
	}
	var err error
	for i := range keys {
		b := ShardOf(keys[i].ID, n)
		if raws[b][len(raws[b])-1] != '[' {
			raws[b] = append(raws[b], ',')
		}
		if piece != nil {
			if kept := piece(&keys[i]); kept != nil {
				raws[b] = append(raws[b], kept...)
				continue
			}
		}
		if raws[b], err = encodeCompact(raws[b], &keys[i]); err != nil {
			return nil, 0, fmt.Errorf("encoding key %s: %w", quote(keys[i].ID), err)
		}
	}
	total := 0
	for i := range raws {
		raws[i] = append(raws[i], "]}"...)
		total += len(raws[i])
	}
	return raws, total, nil
}

// encodeCompact appends v's compact JSON, members sorted by name as in the
// canonical form.
func encodeCompact(b []byte, v any) ([]byte, error) {
	return appendJSON(b, v, compactDepth)
}

// shardCount is the number of key shards for total bytes of key JSON: the
// previous count while shards stay between a quarter of and twice the
// target (so one key more or less never reshuffles every shard), else the
// smallest power of two that brings them to the target.
func shardCount(total, prev, target int) int {
	if prev >= 1 && prev&(prev-1) == 0 && prev <= MaxKeyShards &&
		total <= 2*target*prev && (prev == 1 || 4*total >= target*prev) {
		return prev
	}
	n := 1
	for n < MaxKeyShards && total > target*n {
		n *= 2
	}
	return n
}

func compress(raw []byte) ([]byte, error) {
	var buf bytes.Buffer
	buf.Grow(len(raw) / 4)
	zw := gzip.NewWriter(&buf)
	if _, err := zw.Write(raw); err != nil {
		return nil, fmt.Errorf("compressing a snapshot part: %w", err)
	}
	if err := zw.Close(); err != nil {
		return nil, fmt.Errorf("compressing a snapshot part: %w", err)
	}
	return buf.Bytes(), nil
}

// ParseHead decodes a head strictly and checks its shape.
func ParseHead(data []byte) (*Head, error) {
	var h Head
	if err := json.Unmarshal(data, &h, json.RejectUnknownMembers(true)); err != nil {
		return nil, fmt.Errorf("snapshot head: %w", decodeErrorIn(data, err))
	}
	if !strings.HasPrefix(h.Version, "sha256:") {
		return nil, errors.New("snapshot head: no version")
	}
	n := len(h.Keys)
	if n < 1 || n > MaxKeyShards || n&(n-1) != 0 {
		return nil, fmt.Errorf("snapshot head: %d key shards; a power of two from 1 to %d is expected", n, MaxKeyShards)
	}
	for _, r := range h.Parts() {
		if r.Name == "" || len(r.SHA256) != 2*sha256.Size {
			return nil, fmt.Errorf("snapshot head: part %q has no name or no SHA-256", r.Name)
		}
	}
	return &h, nil
}

// ReadPart decompresses a part's data, at most MaxPartRawBytes, and checks
// it against the hash its head names.
func ReadPart(ref PartRef, data []byte) ([]byte, error) {
	zr, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		return nil, fmt.Errorf("part %s: %w", ref.Name, err)
	}
	raw, err := io.ReadAll(io.LimitReader(zr, MaxPartRawBytes+1))
	if err != nil {
		return nil, fmt.Errorf("part %s: %w", ref.Name, err)
	}
	if len(raw) > MaxPartRawBytes {
		return nil, fmt.Errorf("part %s: more than %d bytes uncompressed", ref.Name, MaxPartRawBytes)
	}
	if sum := sha256.Sum256(raw); hex.EncodeToString(sum[:]) != ref.SHA256 {
		return nil, fmt.Errorf("part %s: content does not match the head's hash", ref.Name)
	}
	return raw, nil
}

// ParseConfigPart decodes the config part as strictly as Parse decodes a
// snapshot (unknown, duplicate or wrongly-cased fields are errors); it must
// carry no keys and no version.
func ParseConfigPart(raw []byte) (*Snapshot, error) {
	var s Snapshot
	if err := json.Unmarshal(raw, &s, json.RejectUnknownMembers(true)); err != nil {
		return nil, fmt.Errorf("config part: %w", decodeErrorIn(raw, err))
	}
	if len(s.Keys) > 0 || s.Version != "" {
		return nil, errors.New("config part: carries keys or a version")
	}
	return &s, nil
}

type keyPart struct {
	Keys []Key `json:"keys"`
}

// ParseKeyPart decodes a key shard strictly.
func ParseKeyPart(raw []byte) ([]Key, error) {
	var p keyPart
	if err := json.Unmarshal(raw, &p, json.RejectUnknownMembers(true)); err != nil {
		return nil, fmt.Errorf("key part: %w", decodeErrorIn(raw, err))
	}
	return p.Keys, nil
}

// Assemble joins decoded parts into the snapshot h describes: shards[i] is
// the decoded Keys[i] and each of its keys must belong there. The result has
// no version: the reader seals it (Encode, as server.Apply does) and should
// find h.Version. Its slices are new; keys are shallow copies of the
// shards' (treat both as read-only).
func Assemble(h *Head, config *Snapshot, shards [][]Key) (*Snapshot, error) {
	if len(shards) != len(h.Keys) {
		return nil, fmt.Errorf("assembling snapshot %s: %d key shards, the head names %d", h.Version, len(shards), len(h.Keys))
	}
	s := *config
	s.Version = ""
	total := 0
	for _, keys := range shards {
		total += len(keys)
	}
	for i, keys := range shards {
		for j := range keys {
			if ShardOf(keys[j].ID, len(shards)) != i {
				return nil, fmt.Errorf("assembling snapshot %s: key %s is in shard %d, it belongs in %d",
					h.Version, quote(keys[j].ID), i, ShardOf(keys[j].ID, len(shards)))
			}
		}
	}
	s.Keys = mergeByID(shards, total)
	return &s, nil
}

// mergeByID merges shards that are each sorted by id (as Split writes them)
// into one list sorted by id, so that sealing the result (Normalize sorts
// the keys) finds them in order instead of sorting 50,000 keys again. A
// shard out of order still yields every key; Normalize then sorts.
func mergeByID(shards [][]Key, total int) []Key {
	out := make([]Key, 0, total)
	pos := make([]int, len(shards))
	// A binary heap of shard indexes, ordered by each shard's next id.
	heap := make([]int, 0, len(shards))
	less := func(a, b int) bool { return shards[heap[a]][pos[heap[a]]].ID < shards[heap[b]][pos[heap[b]]].ID }
	down := func(i int) {
		for {
			l, m := 2*i+1, i
			if l < len(heap) && less(l, m) {
				m = l
			}
			if r := l + 1; r < len(heap) && less(r, m) {
				m = r
			}
			if m == i {
				return
			}
			heap[i], heap[m] = heap[m], heap[i]
			i = m
		}
	}
	for i, keys := range shards {
		if len(keys) > 0 {
			heap = append(heap, i)
		}
	}
	for i := len(heap)/2 - 1; i >= 0; i-- {
		down(i)
	}
	for len(heap) > 0 {
		b := heap[0]
		out = append(out, shards[b][pos[b]])
		if pos[b]++; pos[b] == len(shards[b]) {
			heap[0] = heap[len(heap)-1]
			heap = heap[:len(heap)-1]
		}
		down(0)
	}
	return out
}
