// Command smoke is the one static program of the kind smoke check
// (hack/kind/smoke.sh). Its image is built FROM scratch and loaded into the
// node with `kind load docker-image`, so every pod of the check also proves
// that the load worked.
//
//	smoke serve [ADDR]        HTTP server answering "llmgw-smoke ok <hostname>"
//	smoke probe URL [TRIES]   GET URL (retrying), print the body, fail unless 200
//	smoke write FILE TEXT     write TEXT to FILE
//	smoke cat FILE            print FILE
package main

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"time"
)

func main() {
	if len(os.Args) < 2 {
		usage()
	}
	var err error
	switch args := os.Args[2:]; os.Args[1] {
	case "serve":
		addr := ":8080"
		if len(args) > 0 {
			addr = args[0]
		}
		err = serve(addr)
	case "probe":
		if len(args) < 1 {
			usage()
		}
		tries := 30
		if len(args) > 1 {
			if tries, err = strconv.Atoi(args[1]); err != nil {
				usage()
			}
		}
		err = probe(args[0], tries)
	case "write":
		if len(args) != 2 {
			usage()
		}
		err = os.WriteFile(args[0], []byte(args[1]+"\n"), 0o644)
	case "cat":
		if len(args) != 1 {
			usage()
		}
		var b []byte
		if b, err = os.ReadFile(args[0]); err == nil {
			_, err = os.Stdout.Write(b)
		}
	default:
		usage()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "smoke:", err)
		os.Exit(1)
	}
}

func usage() {
	fmt.Fprintln(os.Stderr, "usage: smoke serve [ADDR] | probe URL [TRIES] | write FILE TEXT | cat FILE")
	os.Exit(2)
}

func serve(addr string) error {
	host, _ := os.Hostname()
	srv := &http.Server{
		Addr:              addr,
		ReadHeaderTimeout: 5 * time.Second,
		Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			fmt.Fprintf(w, "llmgw-smoke ok %s\n", host)
		}),
	}
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	go func() { <-sig; srv.Close() }()
	fmt.Println("smoke: serving on", addr)
	if err := srv.ListenAndServe(); err != http.ErrServerClosed {
		return err
	}
	return nil
}

func probe(url string, tries int) error {
	client := &http.Client{Timeout: 5 * time.Second}
	var last error
	for i := 0; i < tries; i++ {
		if i > 0 {
			time.Sleep(2 * time.Second)
		}
		resp, err := client.Get(url)
		if err != nil {
			last = err
			continue
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			last = err
			continue
		}
		if resp.StatusCode != http.StatusOK {
			last = fmt.Errorf("%s: HTTP %d", url, resp.StatusCode)
			continue
		}
		fmt.Print(string(body))
		return nil
	}
	return fmt.Errorf("%s: no answer after %d tries: %w", url, tries, last)
}
