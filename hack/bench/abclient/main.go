// Command abclient is hack/bench/ab-cpu.sh's load: N chat requests (SSE or
// JSON) from C keep-alive clients, every body read to its end; any error or
// status but 200 fails the run (exit 1).
//
//	abclient URL KEY N C on|off
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
	if len(os.Args) != 6 {
		fmt.Fprintln(os.Stderr, "usage: abclient URL KEY N C on|off")
		os.Exit(2)
	}
	url, key, stream := os.Args[1], os.Args[2], os.Args[5] == "on"
	n, _ := strconv.Atoi(os.Args[3])
	c, _ := strconv.Atoi(os.Args[4])
	body := fmt.Sprintf(`{"model":"chat-alpha","stream":%v,"messages":[{"role":"user","content":"hello there, how are you today?"}]}`, stream)
	http.DefaultTransport.(*http.Transport).MaxIdleConnsPerHost = c
	var wg sync.WaitGroup
	for g := 0; g < c; g++ {
		wg.Go(func() {
			for i := g; i < n; i += c {
				req, _ := http.NewRequest("POST", url+"/v1/chat/completions", strings.NewReader(body))
				req.Header.Set("Authorization", "Bearer "+key)
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
