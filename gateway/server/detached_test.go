package server

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"
)

type ctxKey struct{}

func TestDetachedCtxKeepsValuesNotCancellation(t *testing.T) {
	parent, cancelParent := context.WithCancel(context.WithValue(context.Background(), ctxKey{}, "request"))
	ctx, cancel := detachedTimeout(parent, time.Hour)
	defer cancel()
	cancelParent()
	if err := ctx.Err(); err != nil {
		t.Fatalf("Err = %v after the parent's cancel; a detached context outlives its request", err)
	}
	select {
	case <-ctx.Done():
		t.Fatal("Done closed with the parent")
	default:
	}
	if v := ctx.Value(ctxKey{}); v != "request" {
		t.Fatalf("Value = %v, want the parent's", v)
	}
	if d, ok := ctx.Deadline(); !ok || time.Until(d) < 59*time.Minute {
		t.Fatalf("Deadline = %v, %v; want about an hour from now", d, ok)
	}
}

// The deadline holds whether Done is asked for before it, after it, or
// never (Err alone).
func TestDetachedCtxEndsAtItsDeadline(t *testing.T) {
	for _, tc := range []struct {
		name string
		wait func(t *testing.T, ctx context.Context)
	}{
		{"Done asked first", func(t *testing.T, ctx context.Context) {
			select {
			case <-ctx.Done():
			case <-time.After(10 * time.Second):
				t.Fatal("Done not closed 10 s after a 20 ms deadline")
			}
		}},
		{"Err polled, Done never asked", func(t *testing.T, ctx context.Context) {
			for end := time.Now().Add(10 * time.Second); ctx.Err() == nil; time.Sleep(5 * time.Millisecond) {
				if time.Now().After(end) {
					t.Fatal("Err still nil 10 s after a 20 ms deadline")
				}
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := detachedTimeout(context.Background(), 20*time.Millisecond)
			defer cancel()
			tc.wait(t, ctx)
			if err := ctx.Err(); !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("Err = %v, want DeadlineExceeded", err)
			}
			select {
			case <-ctx.Done(): // asked for after the end: closed already
			default:
				t.Fatal("Done open while Err is not nil")
			}
			cancel()
			if err := ctx.Err(); !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("Err = %v after cancel, want the first error kept", err)
			}
		})
	}
}

func TestDetachedCtxCancel(t *testing.T) {
	for _, asked := range []bool{false, true} {
		ctx, cancel := detachedTimeout(context.Background(), time.Hour)
		var done <-chan struct{}
		if asked {
			done = ctx.Done()
		}
		cancel()
		if err := ctx.Err(); !errors.Is(err, context.Canceled) {
			t.Fatalf("Done asked before cancel %v: Err = %v, want Canceled", asked, err)
		}
		if !asked {
			done = ctx.Done()
		}
		select {
		case <-done:
		default:
			t.Fatalf("Done asked before cancel %v: Done still open", asked)
		}
	}
}

// A context derived from it ends at its deadline (context's own
// propagation asks for Done, which starts the timer).
func TestDetachedCtxEndsItsChildren(t *testing.T) {
	ctx, cancel := detachedTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	child, cancelChild := context.WithCancel(ctx)
	defer cancelChild()
	select {
	case <-child.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("child not canceled 10 s after its parent's 20 ms deadline")
	}
	if err := child.Err(); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("child Err = %v, want DeadlineExceeded", err)
	}
}

// What it is for: no timer for a bound nobody waits on. Err and cancel
// start none; Done does.
func TestDetachedCtxStartsNoTimerUntilDone(t *testing.T) {
	ctx, cancel := detachedTimeout(context.Background(), time.Hour)
	c := ctx.(*detachedCtx)
	_ = ctx.Err()
	if c.timer != nil || c.done != nil {
		t.Fatal("Err started a timer")
	}
	ctx.Done()
	if c.timer == nil {
		t.Fatal("Done started no timer: the deadline would never close it")
	}
	cancel()
	if c.timer.Stop() {
		t.Fatal("cancel left the timer running")
	}
	c2, cancel2 := detachedTimeout(context.Background(), time.Hour)
	cancel2()
	if c2.(*detachedCtx).timer != nil {
		t.Fatal("cancel without Done started a timer")
	}
}

func TestDetachedCtxConcurrentUse(t *testing.T) {
	ctx, cancel := detachedTimeout(context.Background(), 5*time.Millisecond)
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			switch i % 3 {
			case 0:
				<-ctx.Done()
			case 1:
				for ctx.Err() == nil {
					time.Sleep(time.Millisecond)
				}
			default:
				time.Sleep(10 * time.Millisecond)
				cancel()
			}
		}()
	}
	wg.Wait()
	if ctx.Err() == nil {
		t.Fatal("Err nil after the deadline and cancel")
	}
}
