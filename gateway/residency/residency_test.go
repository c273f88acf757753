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
Anonymous:             0 kB
THPeligible:    0
VmFlags: rd ex mr mw me dw sd
01805000-02c9f000 r--p 01405000 fe:00 9987913                            /work/bin/llmgw
Rss:               15140 kB
Anonymous:             0 kB
VmFlags: rd mr mw me dw sd
02c9f000-02d4f000 rw-p 0289f000 fe:00 9987913                            /work/bin/llmgw
Rss:                 572 kB
Anonymous:           440 kB
VmFlags: rd wr mr mw me dw ac sd
02d4f000-02d60000 r--p 0294f000 fe:00 9987913                            /work/bin/llmgw (deleted)
Anonymous:           152 kB
1bf264000000-1bf264800000 rw-p 00000000 00:00 0 
Rss:                3968 kB
Anonymous:          3968 kB
7f26b2374000-7f26b239a000 r--p 00000000 fe:00 1234                       /usr/lib/x86_64-linux-gnu/lib c.so.6
Anonymous:             0 kB
7f26b2400000-7f26b2500000 r--s 00000000 fe:00 9987913                    /work/bin/llmgw
Anonymous:             0 kB
7f26b2600000-7f26b2700000 r-xp 00000000 fe:01 9987913                    /other/device
Anonymous:             0 kB
`

func TestParseSmaps(t *testing.T) {
	got, err := parseSmaps(strings.NewReader(smapsSample))
	if err != nil {
		t.Fatal(err)
	}
	want := []mapping{
		{start: 0x400000, end: 0x1805000, perms: "r-xp", dev: "fe:00", inode: 9987913},
		{start: 0x1805000, end: 0x2c9f000, perms: "r--p", dev: "fe:00", inode: 9987913},
		{start: 0x2c9f000, end: 0x2d4f000, perms: "rw-p", dev: "fe:00", inode: 9987913, anonymous: 440},
		{start: 0x2d4f000, end: 0x2d60000, perms: "r--p", dev: "fe:00", inode: 9987913, anonymous: 152},
		{start: 0x1bf264000000, end: 0x1bf264800000, perms: "rw-p", dev: "00:00", inode: 0, anonymous: 3968},
		{start: 0x7f26b2374000, end: 0x7f26b239a000, perms: "r--p", dev: "fe:00", inode: 1234},
		{start: 0x7f26b2400000, end: 0x7f26b2500000, perms: "r--s", dev: "fe:00", inode: 9987913},
		{start: 0x7f26b2600000, end: 0x7f26b2700000, perms: "r-xp", dev: "fe:01", inode: 9987913},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("parseSmaps:\n got %+v\nwant %+v", got, want)
	}
}

func TestParseSmapsRejectsMalformedInput(t *testing.T) {
	for name, in := range map[string]string{
		"field before any mapping": "Rss: 4 kB\n",
		"short header":             "00400000-01805000 r-xp 00000000\n",
		"no range":                 "00400000 r-xp 00000000 fe:00 1 /x\n",
		"bad start":                "0040zz00-01805000 r-xp 00000000 fe:00 1 /x\n",
		"bad end":                  "00400000-0180zz00 r-xp 00000000 fe:00 1 /x\n",
		"inverted range":           "01805000-00400000 r-xp 00000000 fe:00 1 /x\n",
		"bad inode":                "00400000-01805000 r-xp 00000000 fe:00 x1 /x\n",
		"bad size":                 "00400000-01805000 r-xp 00000000 fe:00 1 /x\nAnonymous: x kB\n",
	} {
		t.Run(name, func(t *testing.T) {
			if _, err := parseSmaps(strings.NewReader(in)); err == nil {
				t.Fatalf("parseSmaps(%q) = nil error", in)
			}
		})
	}
}

// Only the executable's private, read-only mappings without a copy-on-write
// page are candidates: anything else holds data that exists nowhere else.
func TestCleanPicksOnlyTheExecutablesUnwrittenReadOnlyMappings(t *testing.T) {
	maps, err := parseSmaps(strings.NewReader(smapsSample))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, m := range clean(maps, "fe:00", 9987913) {
		got = append(got, m.perms)
	}
	// text and rodata; not the globals (rw-p), the relocated read-only data
	// (Anonymous 152 kB), another file, a shared mapping or another device.
	if want := []string{"r-xp", "r--p"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("clean kept %v, want %v", got, want)
	}
	if len(clean(maps, "fe:00", 42)) != 0 {
		t.Fatal("clean kept mappings of another inode")
	}
}
