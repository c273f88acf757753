// Command apidocs writes the API reference (docs/api-reference.md) from the
// CustomResourceDefinitions in config/crd/bases. controller-gen generates those
// from the Go types in api/v1alpha1 (`make manifests`), so they carry the Go doc
// comments as descriptions, the validation markers, defaults and printer
// columns; rendering the reference from them means it cannot say anything the
// API server does not enforce.
//
//	go run ./hack/apidocs -crds config/crd/bases -out docs/api-reference.md
//
// `make docs` runs exactly that; `make verify-docs` fails when the committed
// file differs from a fresh rendering (hack/apidocs/apidocs.mk).
package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"
)

func main() {
	crds := flag.String("crds", "config/crd/bases", "directory of CustomResourceDefinition YAML files (*.yaml, *.yml)")
	out := flag.String("out", "docs/api-reference.md", "file to write; - for standard output")
	flag.Parse()
	if flag.NArg() > 0 {
		fatal(fmt.Errorf("unexpected arguments %q", flag.Args()))
	}
	defs, err := loadDir(*crds)
	if err != nil {
		fatal(err)
	}
	doc := render(defs, *crds)
	if *out == "-" {
		_, err = os.Stdout.Write(doc)
	} else {
		err = os.WriteFile(*out, doc, 0o644)
	}
	if err != nil {
		fatal(err)
	}
}

func fatal(err error) {
	fmt.Fprintln(os.Stderr, "apidocs:", err)
	os.Exit(1)
}

// loadDir reads every CRD in dir (files in name order, several documents per
// file allowed). Anything that is not a CustomResourceDefinition is an error,
// so a stray file cannot silently drop out of the reference.
func loadDir(dir string) ([]apiextv1.CustomResourceDefinition, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var defs []apiextv1.CustomResourceDefinition
	for _, e := range entries {
		name := e.Name()
		if e.IsDir() || !strings.HasSuffix(name, ".yaml") && !strings.HasSuffix(name, ".yml") {
			continue
		}
		data, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			return nil, err
		}
		got, err := parseCRDs(data)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", filepath.Join(dir, name), err)
		}
		defs = append(defs, got...)
	}
	if len(defs) == 0 {
		return nil, fmt.Errorf("no CustomResourceDefinition found in %s", dir)
	}
	return defs, nil
}

// parseCRDs decodes the YAML documents of one file strictly (an unknown field
// means the generator is older than the CRD format and would drop something).
func parseCRDs(data []byte) ([]apiextv1.CustomResourceDefinition, error) {
	var defs []apiextv1.CustomResourceDefinition
	for i, doc := range splitDocuments(data) {
		var crd apiextv1.CustomResourceDefinition
		if err := yaml.UnmarshalStrict(doc, &crd); err != nil {
			return nil, fmt.Errorf("document %d: %w", i+1, err)
		}
		if crd.Kind != "CustomResourceDefinition" {
			return nil, fmt.Errorf("document %d: kind %q, want CustomResourceDefinition", i+1, crd.Kind)
		}
		defs = append(defs, crd)
	}
	if len(defs) == 0 {
		return nil, errors.New("no YAML document")
	}
	return defs, nil
}

// splitDocuments splits a YAML stream at "---" lines and drops empty documents.
func splitDocuments(data []byte) [][]byte {
	var docs [][]byte
	var cur bytes.Buffer
	flush := func() {
		if len(bytes.TrimSpace(stripComments(cur.Bytes()))) > 0 {
			docs = append(docs, append([]byte(nil), cur.Bytes()...))
		}
		cur.Reset()
	}
	for _, line := range bytes.SplitAfter(data, []byte("\n")) {
		if t := bytes.TrimRight(line, " \t\r\n"); bytes.Equal(t, []byte("---")) {
			flush()
			continue
		}
		cur.Write(line)
	}
	flush()
	return docs
}

func stripComments(doc []byte) []byte {
	var b bytes.Buffer
	for _, line := range bytes.Split(doc, []byte("\n")) {
		if !bytes.HasPrefix(bytes.TrimSpace(line), []byte("#")) {
			b.Write(line)
			b.WriteByte('\n')
		}
	}
	return b.Bytes()
}

// sortCRDs orders kinds by group, then kind, so the output does not depend on
// file names.
func sortCRDs(defs []apiextv1.CustomResourceDefinition) {
	sort.SliceStable(defs, func(i, j int) bool {
		a, b := defs[i].Spec, defs[j].Spec
		if a.Group != b.Group {
			return a.Group < b.Group
		}
		return a.Names.Kind < b.Names.Kind
	})
}
