package main

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite testdata/widgets.golden.md")

// TestGolden renders the CRDs in testdata/crds, which exercise every
// construct the renderer knows (two versions, deprecation, scale, printer
// columns with priority and descriptions, oneOf, CEL rules with field paths,
// reasons and message expressions, defaults, enums, bounds, maps, lists of
// objects, int-or-string, Markdown-hostile descriptions).
func TestGolden(t *testing.T) {
	defs, err := loadDir(filepath.Join("testdata", "crds"))
	if err != nil {
		t.Fatal(err)
	}
	got := render(defs, "testdata/crds")
	golden := filepath.Join("testdata", "widgets.golden.md")
	if *update {
		if err := os.WriteFile(golden, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("render differs from %s (go test ./hack/apidocs -update to accept):\n%s", golden, got)
	}
}

// TestCommittedReferenceIsCurrent is `make verify-docs` inside `go test`: the
// committed docs/api-reference.md must be what the committed CRDs render to.
func TestCommittedReferenceIsCurrent(t *testing.T) {
	root := filepath.Join("..", "..")
	defs, err := loadDir(filepath.Join(root, "config", "crd", "bases"))
	if err != nil {
		t.Fatal(err)
	}
	want := render(defs, "config/crd/bases")
	got, err := os.ReadFile(filepath.Join(root, "docs", "api-reference.md"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatal("docs/api-reference.md differs from what config/crd/bases renders to (a CRD changed, or the file was edited by hand): run 'make docs' and commit it")
	}
}

func TestParseErrors(t *testing.T) {
	for name, tc := range map[string]struct{ yaml, want string }{
		"not a CRD": {"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n", `kind "ConfigMap"`},
		"unknown field": {"apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nspec:\n  grup: x\n",
			"unknown field"},
		"only comments": {"# nothing\n---\n", "no YAML document"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := parseCRDs([]byte(tc.yaml))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want it to mention %q", err, tc.want)
			}
		})
	}
}

func TestLoadDirNeedsCRDs(t *testing.T) {
	if _, err := loadDir(t.TempDir()); err == nil {
		t.Fatal("an empty directory must be an error, not an empty reference")
	}
}

func TestText(t *testing.T) {
	for in, want := range map[string]string{
		"one\n  two\tthree":          "one two three",
		"a | b":                      `a \| b`,
		"<id10> and *all*":           `&lt;id10&gt; and \*all\*`,
		"keep `a|<b>*` as code":      "keep `a\\|<b>*` as code",
		"unbalanced ` tick":          "unbalanced \\` tick",
		"lgw_<id10> [a-z0-9]":        `lgw\_&lt;id10&gt; \[a-z0-9\]`,
		"":                           "",
		"already `x` and `y` twice.": "already `x` and `y` twice.",
	} {
		if got := text(in); got != want {
			t.Errorf("text(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestCode(t *testing.T) {
	for in, want := range map[string]string{
		"plain":   "`plain`",
		"a|b":     "`a\\|b`",
		"has`one": "``has`one``",
		"`edge":   "`` `edge ``",
		"":        "",
	} {
		if got := code(in); got != want {
			t.Errorf("code(%q) = %q, want %q", in, got, want)
		}
	}
}
