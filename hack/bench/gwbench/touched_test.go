package main

import (
	"strings"
	"testing"
)

func TestFileReferenced(t *testing.T) {
	const binary = `00400000-01a00000 r-xp 00000000 08:01 123 /work/bin/llmgw
Size:              22528 kB
Rss:               17000 kB
Referenced:         6000 kB
Anonymous:             0 kB
FilePmdMapped:      4096 kB
`
	const heap = `c000000000-c004000000 rw-p 00000000 00:00 0
Size:              65536 kB
Referenced:         9000 kB
`
	const named = `7f0000000000-7f0000001000 rw-p 00000000 00:00 0 [stack]
Referenced:            8 kB
`
	const shm = `7f1000000000-7f1000008000 rw-s 00000000 08:01 456 /data/usage.db-shm
Referenced:           32 kB
`
	tests := []struct {
		name    string
		in      string
		want    fileMapped
		wantErr bool
	}{
		{"binary only", binary, fileMapped{6000 * 1024, 4096 * 1024}, false},
		{"anonymous and pseudo mappings are left out", heap + named, fileMapped{}, false},
		{"every file mapping counts", binary + heap + shm + named, fileMapped{(6000 + 32) * 1024, 4096 * 1024}, false},
		{"empty", "", fileMapped{}, false},
		{"a malformed Referenced line is an error", "00400000-00401000 r-xp 0 0 0 /bin/x\nReferenced: lots\n", fileMapped{}, true},
		{"a malformed FilePmdMapped line is an error", "00400000-00401000 r-xp 0 0 0 /bin/x\nFilePmdMapped: 2M kB\n", fileMapped{}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := fileReferenced(strings.NewReader(tt.in))
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v, want error %v", err, tt.wantErr)
			}
			if got != tt.want {
				t.Fatalf("got %+v, want %+v", got, tt.want)
			}
		})
	}
}
