// Package source delivers configuration snapshots to a running gateway: from
// a file (standalone mode and `llmgw up`) or from the controller's ConfigMap
// (Kubernetes mode), each with the resolver for the provider credentials its
// snapshots refer to.
//
// A source only reads and parses; it hands every valid snapshot it sees to
// the Sink and every unreadable or invalid one to Sink.ReportReloadError. The
// one rule for "is this a new version" lives in the sink (server.Apply), so a
// good snapshot seen again — a resync, a bad file put back — also clears an
// earlier rejection.
package source

import (
	"context"

	"github.com/llmgw/llmgw/api/snapshot"
	"github.com/llmgw/llmgw/gateway/server"
)

// Sink is what a source feeds; *server.Server is one.
type Sink interface {
	// Apply validates and runs s, or keeps the running snapshot and reports why.
	Apply(ctx context.Context, s *snapshot.Snapshot) error
	// ReportReloadError records a snapshot the source could not read or parse.
	ReportReloadError(err error)
	// Refresh re-resolves the running snapshot's credentials.
	Refresh(ctx context.Context) error
	// Version is the running snapshot's version ("" before the first).
	Version() string
}

// SealedSink is a Sink that can run a snapshot snapshot.SealAssembled has
// sealed without copying and encoding it again (*server.Server is one).
type SealedSink interface {
	Sink
	ApplySealed(ctx context.Context, s *snapshot.Snapshot) error
}

// applySealed hands a sealed snapshot to sink, the cheap way when it can.
func applySealed(ctx context.Context, sink Sink, s *snapshot.Snapshot) error {
	if ss, ok := sink.(SealedSink); ok {
		return ss.ApplySealed(ctx, s)
	}
	return sink.Apply(ctx, s)
}

// Source is one place snapshots come from.
type Source interface {
	// Credentials resolves the credential references of this source's snapshots.
	Credentials() server.CredentialSource
	// Start delivers the first snapshot (or fails), then keeps delivering
	// changes in the background until ctx ends.
	Start(ctx context.Context, sink Sink) error
}
