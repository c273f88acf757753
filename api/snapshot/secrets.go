package snapshot

import (
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"sync"

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

// walkStrings visits every string reachable from v through exported
// fields, list elements and pointers. A per-type plan lists only the fields
// that can hold a string, so the integers, booleans and times of 50,000 keys
// are not visited at all; an interface is walked generically.
func walkStrings(v reflect.Value, path *[]pathSeg, visit func(s string)) {
	if w := walkerFor(v.Type()); w != nil {
		w(v, path, visit)
	}
}

type walker func(v reflect.Value, path *[]pathSeg, visit func(string))

var walkers sync.Map // reflect.Type → walker (nil: no string inside)

func walkerFor(t reflect.Type) walker {
	if w, ok := walkers.Load(t); ok {
		return w.(walker)
	}
	w := buildWalker(t, map[reflect.Type]bool{})
	walkers.Store(t, w)
	return w
}

func buildWalker(t reflect.Type, building map[reflect.Type]bool) walker {
	if building[t] {
		return walkAny // a recursive type: walk it generically
	}
	building[t] = true
	defer delete(building, t)
	switch t.Kind() {
	case reflect.String:
		return func(v reflect.Value, _ *[]pathSeg, visit func(string)) { visit(v.String()) }
	case reflect.Interface:
		return walkAny
	case reflect.Pointer:
		elem := buildWalker(t.Elem(), building)
		if elem == nil {
			return nil
		}
		return func(v reflect.Value, path *[]pathSeg, visit func(string)) {
			if !v.IsNil() {
				elem(v.Elem(), path, visit)
			}
		}
	case reflect.Slice, reflect.Array:
		elem := buildWalker(t.Elem(), building)
		if elem == nil {
			return nil
		}
		return func(v reflect.Value, path *[]pathSeg, visit func(string)) {
			for i := 0; i < v.Len(); i++ {
				*path = append(*path, pathSeg{elem: v.Index(i), index: i})
				elem(v.Index(i), path, visit)
				*path = (*path)[:len(*path)-1]
			}
		}
	case reflect.Struct:
		type field struct {
			index int
			walk  walker
		}
		var fields []field
		for i := 0; i < t.NumField(); i++ {
			if f := t.Field(i); f.IsExported() {
				if w := buildWalker(f.Type, building); w != nil {
					fields = append(fields, field{i, w})
				}
			}
		}
		if len(fields) == 0 {
			return nil
		}
		return func(v reflect.Value, path *[]pathSeg, visit func(string)) {
			for _, f := range fields {
				*path = append(*path, pathSeg{parent: t, index: f.index})
				f.walk(v.Field(f.index), path, visit)
				*path = (*path)[:len(*path)-1]
			}
		}
	}
	return nil
}

// walkAny walks by the value's dynamic type: interfaces, recursive types.
func walkAny(v reflect.Value, path *[]pathSeg, visit func(string)) {
	for v.Kind() == reflect.Interface || v.Kind() == reflect.Pointer {
		if v.IsNil() {
			return
		}
		v = v.Elem()
	}
	if w := walkerFor(v.Type()); w != nil {
		w(v, path, visit)
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
