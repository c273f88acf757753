package snapshot

import (
	"fmt"
	"reflect"
	"strconv"

	"github.com/llmgw/llmgw/api/keyformat"
)

// findPlaintextKeys reports every string field of v that contains a plaintext
// gateway key. It walks the value by reflection so that a string field added later
// is covered without anyone remembering to list it.
func findPlaintextKeys(v any) []error {
	var errs []error
	walkStrings(reflect.ValueOf(v), "", func(path, s string) {
		if keyformat.LooksLikeKey(s) {
			errs = append(errs, fmt.Errorf("%s: looks like a plaintext gateway key; store only its %s hash", path, keyformat.HashPrefix))
		}
	})
	return errs
}

func walkStrings(v reflect.Value, path string, visit func(path, s string)) {
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if !v.IsNil() {
			walkStrings(v.Elem(), path, visit)
		}
	case reflect.String:
		visit(path, v.String())
	case reflect.Slice, reflect.Array:
		for i := 0; i < v.Len(); i++ {
			walkStrings(v.Index(i), path+"["+elemLabel(v.Index(i), i)+"]", visit)
		}
	case reflect.Struct:
		t := v.Type()
		for i := 0; i < t.NumField(); i++ {
			f := t.Field(i)
			if !f.IsExported() {
				continue
			}
			name := jsonName(f)
			if path != "" {
				name = path + "." + name
			}
			walkStrings(v.Field(i), name, visit)
		}
	}
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
