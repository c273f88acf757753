// Command abclient is hack/bench/ab-cpu.sh's load: N chat requests (SSE or
// JSON) from C keep-alive clients, every body read to its end; any error or
// status but 200 fails the run (exit 1).
//
//	abclient URL KEY N C on|off [openai|anthropic]
//
// anthropic sends the beta mock's own protocol (/v1/messages, x-api-key),
// as the reverse proxy in front of it is asked; openai (the default) sends
// chat completions for the alias chat-alpha.
package main

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
)

func main() {
	if len(os.Args) != 6 && len(os.Args) != 7 {
		fmt.Fprintln(os.Stderr, "usage: abclient URL KEY N C on|off [openai|anthropic]")
		os.Exit(2)
	}
	url, key, stream := os.Args[1], os.Args[2], os.Args[5] == "on"
	n, _ := strconv.Atoi(os.Args[3])
	c, _ := strconv.Atoi(os.Args[4])
	path, auth, prefix := "/v1/chat/completions", "Authorization", "Bearer "
	// The bodies of make bench (hack/bench/gwbench/workload.go): a system
	// message, and a stream asks for its usage.
	body := `{"model":"chat-alpha","messages":[{"role":"system","content":"You are terse"},{"role":"user","content":"Tell me something deterministic please"}]}`
	if stream {
		body = body[:len(body)-1] + `,"stream":true,"stream_options":{"include_usage":true}}`
	}
	if len(os.Args) == 7 && os.Args[6] == "anthropic" {
		path, auth, prefix = "/v1/messages", "X-Api-Key", ""
		body = fmt.Sprintf(`{"model":"beta-large","max_tokens":256,"stream":%v,"system":"You are terse","messages":[{"role":"user","content":"Tell me something deterministic please"}]}`, stream)
	} else if len(os.Args) == 7 && os.Args[6] != "openai" {
		fmt.Fprintln(os.Stderr, "abclient: the protocol is openai or anthropic")
		os.Exit(2)
	}
	http.DefaultTransport.(*http.Transport).MaxIdleConnsPerHost = c
	var wg sync.WaitGroup
	for g := 0; g < c; g++ {
		wg.Go(func() {
			for i := g; i < n; i += c {
				req, _ := http.NewRequest("POST", url+path, strings.NewReader(body))
				req.Header.Set(auth, prefix+key)
				req.Header.Set("Content-Type", "application/json")
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					fmt.Fprintln(os.Stderr, err)
					os.Exit(1)
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != 200 {
					fmt.Fprintln(os.Stderr, resp.Status)
					os.Exit(1)
				}
			}
		})
	}
	wg.Wait()
}
