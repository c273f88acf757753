package mockproviders

import (
	"net/http"
	"strconv"
	"time"
)

// sleep waits d or until the request ends (client gone, server shutting down);
// false means stop, there is nobody left to answer.
func sleep(r *http.Request, d time.Duration) bool {
	if d <= 0 {
		return r.Context().Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-r.Context().Done():
		return false
	}
}

// send writes and flushes one piece of the body; false means the client is gone.
func send(w http.ResponseWriter, rc *http.ResponseController, b []byte) bool {
	if _, err := w.Write(b); err != nil {
		return false
	}
	return rc.Flush() == nil
}

// abort cuts the connection without finishing the response: net/http closes it
// without the final chunk (HTTP/1.1) or resets the stream (HTTP/2), and does not
// log a panic with this value.
func abort() {
	panic(http.ErrAbortHandler)
}

// cutKind is the mid-answer fault chosen by the *_after keys (at most one is set).
type cutKind int

const (
	cutNone cutKind = iota
	cutDrop
	cutError
	cutStall
)

// cut returns the fault and after how many content pieces it fires; past the
// last piece it fires before the finish event.
func (x *exchange) cut() (cutKind, int) {
	kind, n := cutNone, 0
	switch {
	case x.fault.Has("drop_after"):
		kind, n = cutDrop, x.fault.DropAfter
	case x.fault.Has("error_after"):
		kind, n = cutError, x.fault.ErrorAfter
	case x.fault.Has("stall_after"):
		kind, n = cutStall, x.fault.StallAfter
	}
	return kind, min(n, len(x.ans.pieces))
}

func (h *handler) chunkDelay(x *exchange) time.Duration {
	if x.fault.Has("chunk_delay_ms") {
		return ms(x.fault.ChunkDelayMS)
	}
	return h.opts.DefaultChunkDelay
}

func (h *handler) stream(w http.ResponseWriter, r *http.Request, x *exchange) {
	rc := http.NewResponseController(w)
	hdr := w.Header()
	hdr.Set("Content-Type", "text/event-stream")
	hdr.Set("Cache-Control", "no-cache")
	hdr.Set("X-Accel-Buffering", "no") // keeps buffering proxies from batching events
	w.WriteHeader(http.StatusOK)
	if rc.Flush() != nil || !sleep(r, ms(x.fault.FirstByteDelayMS)) {
		return
	}
	for _, ev := range x.proto.streamHead(x) {
		if !send(w, rc, ev) {
			return
		}
	}
	kind, at := x.cut()
	delay := h.chunkDelay(x)
	for i := range x.ans.pieces {
		if kind != cutNone && i == at {
			break
		}
		if i > 0 && !sleep(r, delay) {
			return
		}
		if !send(w, rc, x.proto.streamPiece(x, i)) {
			return
		}
		x.sentPiece(i)
	}
	switch kind {
	case cutDrop:
		abort()
	case cutError:
		send(w, rc, x.proto.streamError(x))
		return
	case cutStall:
		<-r.Context().Done()
		return
	}
	tail, withUsage := x.proto.streamTail(x)
	for _, ev := range tail {
		if !send(w, rc, ev) {
			return
		}
	}
	x.sent.usageSent = withUsage
}

// json answers a non-streaming call. The *_after faults map onto a body: drop and
// stall send the first half of it (then cut, or go silent); error_after becomes a
// 500 error answer because a JSON response has no place for a mid-answer event.
func (h *handler) json(w http.ResponseWriter, r *http.Request, x *exchange) {
	kind, _ := x.cut()
	if kind == cutError {
		h.proto.writeError(w, &apiError{status: http.StatusInternalServerError, message: "mock fault: error_after requested by an @mock directive"})
		return
	}
	// A real vendor answers JSON only after generating every piece.
	if n := len(x.ans.pieces) - 1; n > 0 && !sleep(r, time.Duration(n)*h.chunkDelay(x)) {
		return
	}
	if h.sendJSON(w, r, x, x.proto.jsonBody(x), kind) {
		for i := range x.ans.pieces {
			x.sentPiece(i)
		}
		x.sent.usageSent = !x.noUsage
	}
}

// sendJSON writes a 200 JSON body, honouring first_byte_delay_ms and the
// drop/stall cuts (half the body, then cut or silence); true means the
// whole body was written.
func (h *handler) sendJSON(w http.ResponseWriter, r *http.Request, x *exchange, body []byte, kind cutKind) bool {
	rc := http.NewResponseController(w)
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(http.StatusOK)
	if x.fault.FirstByteDelayMS > 0 && (rc.Flush() != nil || !sleep(r, ms(x.fault.FirstByteDelayMS))) {
		return false
	}
	if kind == cutDrop || kind == cutStall {
		if !send(w, rc, body[:len(body)/2]) {
			return false
		}
		if kind == cutDrop {
			abort()
		}
		<-r.Context().Done()
		return false
	}
	_, err := w.Write(body)
	return err == nil
}
