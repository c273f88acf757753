package mockproviders

import "strings"

// Directive renders faults as one directive line that ParseDirectives maps back to
// the same faults (the round-trip tests use it).
func Directive(faults map[Flavor]Fault) string {
	var b strings.Builder
	b.WriteString(DirectivePrefix)
	for _, fl := range []Flavor{Alpha, Beta} {
		for _, l := range faults[fl].Labels() {
			b.WriteString(" " + string(fl) + ":" + l)
		}
	}
	return b.String()
}
