package snapshot

import (
	"fmt"
	"reflect"
	"strconv"
	"strings"

	"github.com/llmgw/llmgw/api/keyformat"
)

// findPlaintextKeys reports every string field of v that contains a plaintext
// gateway key. It walks the value by reflection so that a string field added later
// is covered without anyone remembering to list it. The path of a string is
// only spelled out when it is reported: building it for every string cost
// about a second at 50,000 keys.
func findPlaintextKeys(v any) []error {
	var errs []error
	var path []pathSeg
	walkStrings(reflect.ValueOf(v), &path, func(s string) {
		if keyformat.LooksLikeKey(s) {
			errs = append(errs, fmt.Errorf("%s: looks like a plaintext gateway key; store only its %s hash", formatPath(path), keyformat.HashPrefix))
		}
	})
	return errs
}

// pathSeg is one step from the root to a string: a struct field or a list
// element.
type pathSeg struct {
	parent reflect.Type // the struct of a field; nil for a list element
	elem   reflect.Value
	index  int // the field's or the element's
}

func walkStrings(v reflect.Value, path *[]pathSeg, visit func(s string)) {
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if !v.IsNil() {
			walkStrings(v.Elem(), path, visit)
		}
	case reflect.String:
		visit(v.String())
	case reflect.Slice, reflect.Array:
		for i := 0; i < v.Len(); i++ {
			*path = append(*path, pathSeg{elem: v.Index(i), index: i})
			walkStrings(v.Index(i), path, visit)
			*path = (*path)[:len(*path)-1]
		}
	case reflect.Struct:
		t := v.Type()
		for i := 0; i < t.NumField(); i++ {
			f := t.Field(i)
			if !f.IsExported() {
				continue
			}
			*path = append(*path, pathSeg{parent: t, index: i})
			walkStrings(v.Field(i), path, visit)
			*path = (*path)[:len(*path)-1]
		}
	}
}

// formatPath spells a path the way error messages show it: keys[key-a].id.
func formatPath(path []pathSeg) string {
	var b strings.Builder
	for _, seg := range path {
		if seg.parent == nil {
			b.WriteString("[" + elemLabel(seg.elem, seg.index) + "]")
			continue
		}
		if b.Len() > 0 {
			b.WriteByte('.')
		}
		b.WriteString(jsonName(seg.parent.Field(seg.index)))
	}
	return b.String()
}

// elemLabel prefers an element's name or id to its index: "keys[key-a].id" says
// which object to fix, "keys[3].id" makes the reader count.
func elemLabel(v reflect.Value, i int) string {
	for v.Kind() == reflect.Pointer && !v.IsNil() {
		v = v.Elem()
	}
	if v.Kind() == reflect.Struct {
		for _, f := range []string{"Name", "ID"} {
			if fv := v.FieldByName(f); fv.IsValid() && fv.Kind() == reflect.String && fv.String() != "" {
				return quote(fv.String())
			}
		}
	}
	return strconv.Itoa(i)
}
