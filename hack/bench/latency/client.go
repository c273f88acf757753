package main

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"
)

// target is one of the two paths a request can take.
type target struct {
	name string // "direct" or "gateway"
	url  string // the chat-completions endpoint
	auth string // the whole Authorization header value
}

// sample is one request's timing. first is the time to the first byte of
// content (streams only): the moment the caller sees the first token.
type sample struct {
	total, first time.Duration
}

func newClient(conns int) *http.Client {
	return &http.Client{Transport: &http.Transport{
		Proxy:               nil, // loopback only, whatever the environment says
		DialContext:         (&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		MaxIdleConns:        4 * conns,
		MaxIdleConnsPerHost: 2 * conns,
		IdleConnTimeout:     2 * time.Minute,
		DisableCompression:  true,
	}, Timeout: 30 * time.Second}
}

// caller issues requests with one body; one per worker goroutine, so its
// buffers are reused without locking.
type caller struct {
	client *http.Client
	body   []byte
	stream bool
	br     *bufio.Reader
}

func newCaller(c *http.Client, body []byte, stream bool) *caller {
	return &caller{client: c, body: body, stream: stream, br: bufio.NewReaderSize(nil, 32<<10)}
}

var (
	contentMark = []byte(`"content":"`)
	emptyMark   = []byte(`"content":""`)
	dataPrefix  = []byte("data: ")
	doneLine    = []byte("data: [DONE]\n")
)

// do sends one request and reads the whole answer. Anything but a complete,
// well-formed answer is an error: a fast failure must never count as a fast
// request.
func (c *caller) do(t *target) (sample, error) {
	req, err := http.NewRequest(http.MethodPost, t.url, bytes.NewReader(c.body))
	if err != nil {
		return sample{}, err
	}
	req.Header.Set("Authorization", t.auth)
	req.Header.Set("Content-Type", "application/json")
	t0 := time.Now()
	resp, err := c.client.Do(req)
	if err != nil {
		return sample{}, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return sample{}, fmt.Errorf("%s: HTTP %d: %s", t.name, resp.StatusCode, bytes.TrimSpace(b))
	}
	if !c.stream {
		n, err := io.Copy(io.Discard, resp.Body)
		if err != nil {
			return sample{}, err
		}
		if n == 0 {
			return sample{}, fmt.Errorf("%s: empty body", t.name)
		}
		return sample{total: time.Since(t0)}, nil
	}
	var s sample
	dones := 0
	c.br.Reset(resp.Body)
	for {
		line, err := c.br.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			return sample{}, fmt.Errorf("%s: SSE line over 32 KiB", t.name)
		}
		if len(line) > 0 && bytes.HasPrefix(line, dataPrefix) {
			switch {
			case bytes.Equal(line, doneLine):
				dones++
			case s.first == 0 && bytes.Contains(line, contentMark) && !bytes.Contains(line, emptyMark):
				s.first = time.Since(t0)
			}
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			return sample{}, err
		}
	}
	s.total = time.Since(t0)
	c.br.Reset(nil)
	if dones != 1 || s.first == 0 {
		return sample{}, fmt.Errorf("%s: malformed stream (%d [DONE], content seen: %v)", t.name, dones, s.first != 0)
	}
	return s, nil
}
