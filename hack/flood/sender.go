package main

import (
	"context"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"
)

// sender paces one client address's requests: a ticker at the target rate
// hands each tick to a small pool of workers. A tick no worker is free for
// is skipped and counted, so a slow gateway shows up as skipped ticks rather
// than as a growing backlog.
type sender struct {
	name, url, key, body string
	interval             time.Duration
	client               *http.Client
	ticks                chan struct{}
	wg                   sync.WaitGroup

	mu sync.Mutex
	c  counts
}

type counts struct {
	sent, errors, skipped int64
	byStatus              map[int]int64
}

func (c counts) other() int64 {
	n := int64(0)
	for code, k := range c.byStatus {
		if code != 200 && code != 401 && code != 429 {
			n += k
		}
	}
	return n
}

const workers = 8

func newSender(name, srcIP, base, key, body string, perSecond float64) *sender {
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(srcIP)}, Timeout: 5 * time.Second}
	tr := &http.Transport{DialContext: d.DialContext, MaxIdleConnsPerHost: workers}
	return &sender{name: name, url: base + "/v1/chat/completions", key: key, body: body,
		interval: time.Duration(float64(time.Second) / perSecond),
		client:   &http.Client{Transport: tr, Timeout: 30 * time.Second},
		ticks:    make(chan struct{}), c: counts{byStatus: map[int]int64{}}}
}

func (s *sender) start(ctx context.Context) {
	for range workers {
		s.wg.Go(func() {
			for range s.ticks {
				s.one()
			}
		})
	}
	s.wg.Go(func() {
		defer close(s.ticks)
		t := time.NewTicker(s.interval)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				select {
				case s.ticks <- struct{}{}:
				default:
					s.mu.Lock()
					s.c.skipped++
					s.mu.Unlock()
				}
			}
		}
	})
}

func (s *sender) wait() { s.wg.Wait() }

func (s *sender) one() {
	req, err := http.NewRequest(http.MethodPost, s.url, strings.NewReader(s.body))
	if err != nil {
		panic(err) // a constant URL and body
	}
	req.Header.Set("Authorization", "Bearer "+s.key)
	req.Header.Set("Content-Type", "application/json")
	resp, err := s.client.Do(req)
	code := 0
	if err == nil {
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		code = resp.StatusCode
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.c.sent++
	if err != nil {
		s.c.errors++
		return
	}
	s.c.byStatus[code]++
}

func (s *sender) counts() counts {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.c
	c.byStatus = make(map[int]int64, len(s.c.byStatus))
	for k, v := range s.c.byStatus {
		c.byStatus[k] = v
	}
	return c
}
