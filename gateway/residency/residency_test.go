package residency

import (
	"reflect"
	"strings"
	"testing"
)

const smapsSample = `00400000-01805000 r-xp 00000000 fe:00 9987913                            /work/bin/llmgw
Size:              20500 kB
Rss:               15080 kB
Private_Dirty:       684 kB
Referenced:         6000 kB
Anonymous:             0 kB
THPeligible:    0
VmFlags: rd ex mr mw me dw sd
01805000-02c9f000 r--p 01405000 fe:00 9987913                            /work/bin/llmgw
Rss:               15140 kB
Anonymous:             0 kB
FilePmdMapped:     10240 kB
VmFlags: rd mr mw me dw sd
02c9f000-02d4f000 rw-p 0289f000 fe:00 9987913                            /work/bin/llmgw
Rss:                 572 kB
Anonymous:           440 kB
02d4f000-02d60000 r--p 0294f000 fe:00 9987913                            /work/bin/llmgw (deleted)
Anonymous:           152 kB
1bf264000000-1bf264800000 rw-p 00000000 00:00 0 
Rss:                3968 kB
Anonymous:          3968 kB
7ffd0000000-7ffd0021000 rw-p 00000000 00:00 0                          [stack]
7f26b2374000-7f26b239a000 r--p 00000000 fe:00 1234                       /usr/lib/x86_64-linux-gnu/lib c.so.6
7f26b2400000-7f26b2500000 r--s 00000000 fe:00 9987913                    /work/bin/llmgw
7f26b2600000-7f26b2700000 r-xp 00000000 fe:01 9987913                    /other/device
`

func TestParseSmaps(t *testing.T) {
	got, err := ParseSmaps(strings.NewReader(smapsSample))
	if err != nil {
		t.Fatal(err)
	}
	const kB = 1024
	want := []Mapping{
		{Start: 0x400000, End: 0x1805000, Perms: "r-xp", Dev: "fe:00", Inode: 9987913, Path: "/work/bin/llmgw", Referenced: 6000 * kB},
		{Start: 0x1805000, End: 0x2c9f000, Perms: "r--p", Dev: "fe:00", Inode: 9987913, Path: "/work/bin/llmgw", FilePmdMapped: 10240 * kB},
		{Start: 0x2c9f000, End: 0x2d4f000, Perms: "rw-p", Dev: "fe:00", Inode: 9987913, Path: "/work/bin/llmgw", Anonymous: 440 * kB},
		{Start: 0x2d4f000, End: 0x2d60000, Perms: "r--p", Dev: "fe:00", Inode: 9987913, Path: "/work/bin/llmgw (deleted)", Anonymous: 152 * kB},
		{Start: 0x1bf264000000, End: 0x1bf264800000, Perms: "rw-p", Dev: "00:00", Anonymous: 3968 * kB},
		{Start: 0x7ffd0000000, End: 0x7ffd0021000, Perms: "rw-p", Dev: "00:00", Path: "[stack]"},
		{Start: 0x7f26b2374000, End: 0x7f26b239a000, Perms: "r--p", Dev: "fe:00", Inode: 1234, Path: "/usr/lib/x86_64-linux-gnu/lib c.so.6"},
		{Start: 0x7f26b2400000, End: 0x7f26b2500000, Perms: "r--s", Dev: "fe:00", Inode: 9987913, Path: "/work/bin/llmgw"},
		{Start: 0x7f26b2600000, End: 0x7f26b2700000, Perms: "r-xp", Dev: "fe:01", Inode: 9987913, Path: "/other/device"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("ParseSmaps:\n got %+v\nwant %+v", got, want)
	}
}

func TestParseSmapsRejectsMalformedInput(t *testing.T) {
	const hdr = "00400000-01805000 r-xp 00000000 fe:00 1 /x\n"
	for name, in := range map[string]string{
		"field before any mapping": "Anonymous: 4 kB\n",
		"short header":             "00400000-01805000 r-xp 00000000\n",
		"no range":                 "00400000 r-xp 00000000 fe:00 1 /x\n",
		"bad start":                "0040zz00-01805000 r-xp 00000000 fe:00 1 /x\n",
		"bad end":                  "00400000-0180zz00 r-xp 00000000 fe:00 1 /x\n",
		"inverted range":           "01805000-00400000 r-xp 00000000 fe:00 1 /x\n",
		"bad inode":                "00400000-01805000 r-xp 00000000 fe:00 x1 /x\n",
		"bad size":                 hdr + "Anonymous: x kB\n",
		"size without unit":        hdr + "Referenced: lots\n",
		"size in another unit":     hdr + "Referenced: 4 MB\n",
		"bad huge-mapped size":     hdr + "FilePmdMapped: 2M kB\n",
	} {
		t.Run(name, func(t *testing.T) {
			if _, err := ParseSmaps(strings.NewReader(in)); err == nil {
				t.Fatalf("ParseSmaps(%q) = nil error", in)
			}
		})
	}
}

// Only the executable's private, read-only mappings without a copy-on-write
// page are candidates: anything else holds data that exists nowhere else.
func TestCleanPicksOnlyTheExecutablesUnwrittenReadOnlyMappings(t *testing.T) {
	maps, err := ParseSmaps(strings.NewReader(smapsSample))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, m := range clean(maps, "fe:00", 9987913) {
		got = append(got, m.Perms)
	}
	// text and rodata; not the globals (rw-p), the relocated read-only data
	// (152 kB anonymous), another file, a shared mapping or another device.
	if want := []string{"r-xp", "r--p"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("clean kept %v, want %v", got, want)
	}
	if len(clean(maps, "fe:00", 42)) != 0 {
		t.Fatal("clean kept mappings of another inode")
	}
}
