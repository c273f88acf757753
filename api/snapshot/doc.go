// Package snapshot is the gateway's configuration: the schema shared by the
// controller (which writes it) and the gateway (which hot-loads it), its defaults,
// its canonical encoding and content-hash version, its validation, and a read-only
// compiled view for lookups on the request path.
//
// Life cycle: Parse/LoadFile (strict decode, Normalize, Validate, version check) →
// Compile → swap the *Compiled into an atomic.Pointer. A Compiled is never mutated,
// so requests in flight keep the view they started with.
//
// Integer fields whose zero value can never be valid (timeouts, limits, rate limits)
// treat 0 as "unset" and Normalize fills the default; maxFallbacks, where 0 is a
// meaningful choice, is a pointer. After Normalize every field is explicit, so the
// canonical encoding never depends on which defaults a reader happens to assume.
package snapshot
