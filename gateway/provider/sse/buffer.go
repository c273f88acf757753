package sse

import (
	"bytes"
	"errors"
	"io"
	"sync"
)

// readBuffer is the Reader's input buffer. A stream spends nearly all of
// its life waiting for the model's next event, and the buffer a blocked read
// was given stays allocated for as long as it waits: with a 4 KiB buffer per
// stream, a thousand open streams hold 4 MB of buffers that are empty
// almost all the time. So a read that will
// probably wait gets only a small buffer, which a stream keeps; the large
// one, from a pool, serves bursts: a stream's start, and whatever follows a
// read that filled its buffer, which says more is waiting.
//
// Which read will wait cannot be known before it returns; the guess is the
// previous read: one that left room in its buffer took everything the source
// had. A burst that arrives while the small buffer waits is read in two
// steps instead of one, never held back.
type readBuffer struct {
	src     io.Reader
	buf     []byte // small or a large buffer; the unread input is buf[r:w]
	r, w    int
	small   []byte
	large   int  // the large buffer's size
	inLarge bool // buf is a large buffer
	drained bool // the last read left room: the source had nothing more
	err     error
}

// largeBufs recycles the large buffers of the default size.
var largeBufs = sync.Pool{New: func() any { return new([defaultBufSize]byte) }}

const defaultBufSize = 4096

// errBufferFull is ReadSlice's bufio.ErrBufferFull: a line longer than the
// large buffer.
var errBufferFull = errors.New("sse: buffer full")

// smallSize is the buffer a waiting read gets: an eighth of the large one
// (512 B for the default 4 KiB, room for a typical model event), at least
// 16 B.
func smallSize(large int) int {
	return max(large/8, 16)
}

func newReadBuffer(large int) readBuffer {
	s := make([]byte, smallSize(large))
	return readBuffer{buf: s, small: s, large: large}
}

// reset drops the input and any large buffer, and reads from src next; the
// first read of a stream gets a large buffer (a stream starts with a burst).
func (b *readBuffer) reset(src io.Reader) {
	b.releaseLarge()
	b.src, b.r, b.w, b.err, b.drained = src, 0, 0, nil, false
}

func (b *readBuffer) buffered() []byte { return b.buf[b.r:b.w] }

// readSlice is bufio.Reader.ReadSlice('\n'): the input up to and including
// the next LF, as a slice of the buffer valid until the next call; or, with
// the read error, what was left; or the whole large buffer and errBufferFull.
func (b *readBuffer) readSlice() ([]byte, error) {
	searched := 0
	for {
		if i := bytes.IndexByte(b.buf[b.r+searched:b.w], '\n'); i >= 0 {
			line := b.buf[b.r : b.r+searched+i+1]
			b.r += searched + i + 1
			return line, nil
		}
		if b.err != nil {
			line := b.buf[b.r:b.w]
			b.r = b.w
			return line, b.err
		}
		if b.w-b.r == len(b.buf) && (b.inLarge || b.large <= len(b.buf)) {
			line := b.buf
			b.r = b.w
			return line, errBufferFull
		}
		searched = b.w - b.r
		b.fill()
	}
}

// fill reads once into the free end of the buffer, after choosing the
// buffer the read gets.
func (b *readBuffer) fill() {
	if b.r > 0 {
		b.w = copy(b.buf, b.buf[b.r:b.w])
		b.r = 0
	}
	switch {
	case b.inLarge && b.w == 0 && b.drained:
		b.releaseLarge() // nothing buffered and nothing was waiting: this read probably waits
	case !b.inLarge && (b.w == len(b.buf) || !b.drained):
		b.takeLarge() // a line longer than the small buffer, or more input waiting
	}
	// As bufio: a reader that keeps returning nothing is broken.
	for range 100 {
		n, err := b.src.Read(b.buf[b.w:])
		if n < 0 || n > len(b.buf)-b.w {
			b.err = errors.New("sse: invalid read count")
			return
		}
		b.drained = b.w+n < len(b.buf)
		b.w += n
		if err != nil {
			b.err = err
			return
		}
		if n > 0 {
			return
		}
	}
	b.err = io.ErrNoProgress
}

func (b *readBuffer) takeLarge() {
	var l []byte
	if b.large == defaultBufSize {
		l = largeBufs.Get().(*[defaultBufSize]byte)[:]
	} else {
		l = make([]byte, b.large)
	}
	b.w = copy(l, b.buf[b.r:b.w])
	b.r = 0
	b.buf, b.inLarge = l, true
}

// releaseLarge gives the large buffer back, its unread input (none where
// fill calls it) dropped.
func (b *readBuffer) releaseLarge() {
	if !b.inLarge {
		return
	}
	if len(b.buf) == defaultBufSize {
		largeBufs.Put((*[defaultBufSize]byte)(b.buf))
	}
	b.buf, b.inLarge, b.r, b.w = b.small, false, 0, 0
}
