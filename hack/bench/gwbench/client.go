package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"time"
)

// newTransport is a keep-alive HTTP/1.1 client pool for one target.
func newTransport(idle int, keepAlive bool) *http.Transport {
	return &http.Transport{
		Proxy:               nil, // loopback only, whatever the environment says
		DialContext:         (&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		MaxIdleConns:        2 * idle,
		MaxIdleConnsPerHost: idle,
		IdleConnTimeout:     2 * time.Minute,
		DisableCompression:  true,
		DisableKeepAlives:   !keepAlive,
	}
}

// sample is one request's timing from its start (the scheduled send time in
// the open loop). first is to the first byte of content, streams only.
type sample struct {
	total, first time.Duration
}

var readers = sync.Pool{New: func() any { return bufio.NewReaderSize(nil, 32<<10) }}

var (
	dataPrefix   = []byte("data: ")
	oaiContent   = []byte(`"content":"`)
	oaiEmpty     = []byte(`"content":""`)
	oaiDone      = []byte("data: [DONE]\n")
	antTextDelta = []byte(`"text_delta"`)
	antStop      = []byte("event: message_stop\n")
	antText      = []byte(`"text":"`)
)

// do sends one request and reads the whole answer; start is the time the
// latency counts from. Anything but a complete, well-formed answer is an
// error: a fast failure must never count as a fast request.
func do(ctx context.Context, c *http.Client, ep *endpoint, start time.Time) (sample, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, ep.url, bytes.NewReader(ep.body))
	if err != nil {
		return sample{}, err
	}
	req.Header = ep.header.Clone()
	resp, err := c.Do(req)
	if err != nil {
		return sample{}, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 300))
		return sample{}, fmt.Errorf("HTTP %d: %s", resp.StatusCode, bytes.TrimSpace(b))
	}
	if !ep.stream {
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			return sample{}, err
		}
		mark := oaiContent
		if ep.wire == wireAnthropic {
			mark = antText
		}
		if !bytes.Contains(b, mark) {
			return sample{}, fmt.Errorf("answer without content: %.200s", b)
		}
		return sample{total: time.Since(start)}, nil
	}
	br := readers.Get().(*bufio.Reader)
	br.Reset(resp.Body)
	defer func() { br.Reset(nil); readers.Put(br) }()
	var s sample
	ends := 0
	for {
		line, err := br.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			return sample{}, errors.New("SSE line over 32 KiB")
		}
		if s.first == 0 && bytes.HasPrefix(line, dataPrefix) && isContent(ep.wire, line) {
			s.first = time.Since(start)
		}
		if ep.wire == wireOpenAI && bytes.Equal(line, oaiDone) || ep.wire == wireAnthropic && bytes.Equal(line, antStop) {
			ends++
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			return sample{}, err
		}
	}
	s.total = time.Since(start)
	if ends != 1 || s.first == 0 {
		return sample{}, fmt.Errorf("malformed stream: %d end markers, content seen: %v", ends, s.first != 0)
	}
	return s, nil
}

func isContent(w wire, line []byte) bool {
	if w == wireAnthropic {
		return bytes.Contains(line, antTextDelta)
	}
	return bytes.Contains(line, oaiContent) && !bytes.Contains(line, oaiEmpty)
}

// errLog keeps a count of errors and the first few messages.
type errLog struct {
	mu      sync.Mutex
	n       int
	samples []string
}

func (e *errLog) add(err error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.n++
	if len(e.samples) < 5 {
		e.samples = append(e.samples, err.Error())
	}
}

func (e *errLog) count() (int, []string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.n, append([]string(nil), e.samples...)
}
