package server

import (
	"context"
	"time"
)

// Bounds of the retry of unreadable provider credentials: quick at first (a
// Secret created a moment after the snapshot that names it), then at most
// twice a minute.
const (
	credentialRetryMin = 500 * time.Millisecond
	credentialRetryMax = 30 * time.Second
)

// credentialsChanged reports providers whose credential became unreadable or
// readable again between two published states (once per transition), keeps
// the gauge in step, and wakes the retry loop while any is unreadable.
func (s *Server) credentialsChanged(old, st *state) {
	newly := false
	for name, why := range st.unavailable {
		if _, before := old.unavailableProvider(name); !before {
			newly = true
			s.log.Error("provider unavailable: its credential cannot be read; its routes are passed over until it can",
				"provider", name, "err", why)
		}
	}
	if old != nil {
		for name := range old.unavailable {
			if _, still := st.unavailable[name]; !still {
				s.log.Info("provider credential readable again; the provider is back in routing", "provider", name)
			}
		}
	}
	s.metrics.credentialUnavailable.Reset()
	for name := range st.unavailable {
		s.metrics.credentialUnavailable.WithLabelValues(name).Set(1)
	}
	if newly { // a retry that still fails does not reset the backoff
		select {
		case s.credKick <- struct{}{}:
		default:
		}
	}
}

func (st *state) unavailableProvider(name string) (string, bool) {
	if st == nil {
		return "", false
	}
	why, ok := st.unavailable[name]
	return why, ok
}

// RetryCredentials re-reads unreadable provider credentials with backoff
// until every provider of the running snapshot has one, and starts over
// whenever a newly published state has an unreadable one; it runs until ctx
// ends. A Secret (or file) fixed after the fact is picked up without any
// change to the snapshot.
func (s *Server) RetryCredentials(ctx context.Context) {
	backoff := credentialRetryMin
	t := time.NewTimer(time.Hour)
	t.Stop()
	for {
		var wait <-chan time.Time
		if st := s.state.Load(); st != nil && len(st.unavailable) > 0 {
			t.Reset(backoff)
			wait = t.C
		}
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-s.credKick:
			t.Stop()
			backoff = credentialRetryMin
			continue
		case <-wait:
		}
		if err := s.Refresh(ctx); err != nil {
			backoff = min(2*backoff, credentialRetryMax)
			continue
		}
		backoff = credentialRetryMin
	}
}
