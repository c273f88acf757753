// Command revproxy is the benchmark's yardstick: a do-nothing
// httputil.ReverseProxy in front of the two mock providers, so the report can
// say what llmgw costs beyond what any Go reverse proxy costs.
//
// It routes /v1/messages to the beta (Anthropic-style) upstream and every
// other path to the alpha (OpenAI) upstream, copies the caller's headers
// (credentials included) and flushes every write (FlushInterval -1), like a
// streaming-aware proxy must. It reads the small request body before
// proxying: net/http closes an unread inbound body once the handler starts
// writing the response, and with the body still being streamed upstream
// that cut about 3 % of SSE streams. Its upstream pool matches llmgw's
// (256 idle connections per host, 90 s), so neither pays for connection
// churn the other does not.
//
// The management listener serves /metrics (go_goroutines, memory) and
// /debug/pprof, as llmgw's does, so the benchmark reads both the same way.
package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httputil"
	"net/http/pprof"
	"net/url"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// maxBody bounds the buffered request body; benchmark bodies are < 1 KiB.
const maxBody = 1 << 20

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "revproxy:", err)
		os.Exit(1)
	}
}

func run() error {
	addr := flag.String("addr", "127.0.0.1:8081", "data listen address")
	mgmtAddr := flag.String("mgmt-addr", "127.0.0.1:9091", "management listen address (/metrics, /debug/pprof); empty disables it")
	alpha := flag.String("alpha", "http://127.0.0.1:9001", "OpenAI-protocol upstream base URL")
	beta := flag.String("beta", "http://127.0.0.1:9002", "Anthropic-style upstream base URL (/v1/messages goes there)")
	flag.Parse()

	alphaURL, err := url.Parse(*alpha)
	if err != nil {
		return fmt.Errorf("-alpha: %w", err)
	}
	betaURL, err := url.Parse(*beta)
	if err != nil {
		return fmt.Errorf("-beta: %w", err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	srv := &http.Server{Handler: newProxy(alphaURL, betaURL), ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 120 * time.Second}
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return err
	}
	errc := make(chan error, 2)
	go func() { errc <- srv.Serve(ln) }()
	var mgmt *http.Server
	if *mgmtAddr != "" {
		mgmt = &http.Server{Handler: mgmtMux(), ReadHeaderTimeout: 5 * time.Second}
		mln, err := net.Listen("tcp", *mgmtAddr)
		if err != nil {
			return err
		}
		go func() { errc <- mgmt.Serve(mln) }()
	}
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if mgmt != nil {
		_ = mgmt.Shutdown(sctx)
	}
	if err := srv.Shutdown(sctx); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

func newProxy(alpha, beta *url.URL) http.Handler {
	rp := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			if pr.In.URL.Path == "/v1/messages" {
				pr.SetURL(beta)
			} else {
				pr.SetURL(alpha)
			}
		},
		FlushInterval: -1,
		Transport: &http.Transport{
			Proxy:               nil,
			DialContext:         (&net.Dialer{Timeout: 2 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
			MaxIdleConns:        512,
			MaxIdleConnsPerHost: 256,
			IdleConnTimeout:     90 * time.Second,
			DisableCompression:  true,
		},
		ErrorLog: log.New(os.Stderr, "revproxy: ", log.LstdFlags),
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/healthz" {
			w.WriteHeader(http.StatusOK)
			return
		}
		if r.Body != nil && r.Body != http.NoBody {
			body, err := io.ReadAll(io.LimitReader(r.Body, maxBody+1))
			if err != nil || len(body) > maxBody {
				http.Error(w, "bad request body", http.StatusBadRequest)
				return
			}
			r.Body = io.NopCloser(bytes.NewReader(body))
			r.ContentLength = int64(len(body))
		}
		rp.ServeHTTP(w, r)
	})
}

func mgmtMux() *http.ServeMux {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.Handler())
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	return mux
}
