package translate

import (
	"slices"

	"github.com/go-json-experiment/json/jsontext"
)

// edit replaces obj[start:end] with with (start == end: an insertion).
type edit struct {
	start, end int
	with       []byte
}

// splice is obj with the edits applied, as segments: obj's own bytes
// between the edits are not copied.
func splice(obj []byte, edits []edit) [][]byte {
	slices.SortFunc(edits, func(a, b edit) int { return a.start - b.start })
	out := make([][]byte, 0, 2*len(edits)+1)
	at := 0
	for _, e := range edits {
		if e.start > at {
			out = append(out, obj[at:e.start])
		}
		if len(e.with) > 0 {
			out = append(out, e.with)
		}
		at = e.end
	}
	if at < len(obj) {
		out = append(out, obj[at:])
	}
	return out
}

// span is where a top-level member's value lies in its object.
type span struct {
	start, end int
	value      jsontext.Value // obj[start:end]
}

// objectSpans is what memberSpans found of an object.
type objectSpans struct {
	found   map[string]span // the named members it has
	closing int             // the offset of its closing brace
	members int             // how many members it has, named or not
}

// memberSpans finds the values of the named top-level members of obj (a
// valid JSON object: the caller's, already validated), the offset of its
// closing brace and how many members it has.
func memberSpans(obj []byte, names ...string) (*objectSpans, error) {
	dec := getDecoder(obj)
	defer dec.put()
	if dec.PeekKind() != '{' {
		return nil, errNotObject
	}
	if _, err := dec.ReadToken(); err != nil {
		return nil, err
	}
	o := &objectSpans{found: map[string]span{}}
	for dec.PeekKind() == '"' {
		o.members++
		name, err := dec.ReadValue()
		if err != nil {
			return nil, err
		}
		n := unquote(name)
		if !slices.Contains(names, n) {
			if err := dec.SkipValue(); err != nil {
				return nil, err
			}
			continue
		}
		v, err := dec.ReadValue()
		if err != nil {
			return nil, err
		}
		end := int(dec.InputOffset())
		o.found[n] = span{start: end - len(v), end: end, value: obj[end-len(v) : end]}
	}
	if _, err := dec.ReadToken(); err != nil { // '}'
		return nil, err
	}
	o.closing = int(dec.InputOffset()) - 1
	return o, nil
}

// memberValue is a top-level member to set: its name and JSON value.
type memberValue struct {
	name  string
	value []byte
}

// setMembers is the edits that set top-level members of obj: a member obj
// has gets its value replaced where it is; the members it lacks are added,
// in order, in one insertion before the closing brace, so that a comma
// separates each from the one before even in an object that had none.
func setMembers(o *objectSpans, set ...memberValue) []edit {
	edits := make([]edit, 0, len(set))
	var added []byte
	for _, m := range set {
		if sp, ok := o.found[m.name]; ok {
			edits = append(edits, edit{start: sp.start, end: sp.end, with: m.value})
			continue
		}
		if o.members > 0 || len(added) > 0 {
			added = append(added, ',')
		}
		added, _ = jsontext.AppendQuote(added, m.name)
		added = append(added, ':')
		added = append(added, m.value...)
	}
	if len(added) > 0 {
		edits = append(edits, edit{start: o.closing, end: o.closing, with: added})
	}
	return edits
}
