package server

import (
	"context"
	"errors"
	"testing"
	"time"
)

// An attempt's one timer ends it at its own timeout or at the alias's total
// deadline, whichever comes first, and its cause says which.
func TestAttemptContextEndsAtTheFirstDeadline(t *testing.T) {
	tests := []struct {
		name      string
		deadline  time.Duration // from now; 0: no total deadline
		d         time.Duration
		wantCause error
	}{
		{"own timeout first", time.Hour, 20 * time.Millisecond, errAttemptTimeout},
		{"total deadline first", 20 * time.Millisecond, time.Hour, context.DeadlineExceeded},
		{"no total deadline", 0, 20 * time.Millisecond, errAttemptTimeout},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			x := &exchange{}
			if tc.deadline > 0 {
				x.deadline = time.Now().Add(tc.deadline)
			}
			actx, cancel, timer := x.attemptContext(context.Background(), tc.d, errAttemptTimeout)
			defer cancel(nil)
			defer timer.Stop()
			select {
			case <-actx.Done():
			case <-time.After(10 * time.Second):
				t.Fatal("the attempt never ended")
			}
			if cause := context.Cause(actx); !errors.Is(cause, tc.wantCause) {
				t.Fatalf("cause %v, want %v", cause, tc.wantCause)
			}
		})
	}
}

// An attempt that starts after the total deadline is over before it begins:
// the adapter is given a context that is already done.
func TestAttemptAfterTheDeadlineIsDoneAtOnce(t *testing.T) {
	x := &exchange{deadline: time.Now().Add(-time.Millisecond)}
	actx, cancel, timer := x.attemptContext(context.Background(), time.Hour, errFirstChunkTimeout)
	defer cancel(nil)
	defer timer.Stop()
	if actx.Err() == nil || !errors.Is(context.Cause(actx), context.DeadlineExceeded) {
		t.Fatalf("err %v, cause %v", actx.Err(), context.Cause(actx))
	}
	if got := x.untilDeadline(time.Hour); got > 0 {
		t.Fatalf("untilDeadline after the deadline: %v", got)
	}
}
