// Command runtime-wrapper is an OCI runtime that docker calls instead of runc
// for kind's node containers (registered in /etc/docker/daemon.json as the
// "llmgw-runc" runtime by hack/kind/engine.sh).
//
// Some machines start containers with a capability bounding set that lacks
// CAP_SYS_RESOURCE, so `docker run --privileged` (and `docker exec
// --privileged`, which kind uses for every command it runs in a node) fail
// with "unable to apply caps: operation not permitted". The wrapper removes
// CAP_SYS_RESOURCE from the bundle's config.json (--bundle) and from the exec
// process file (--process), then execs the real runc with the same arguments.
//
// It also has one helper mode used by engine.sh, which avoids needing jq:
//
//	runtime-wrapper --llmgw-register DAEMON_JSON NAME PATH
//
// merges {"runtimes": {NAME: {"path": PATH}}} into DAEMON_JSON and exits 0
// when the file changed, 3 when it already had that entry.
package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
)

const dropCap = "CAP_SYS_RESOURCE"

func main() {
	args := os.Args[1:]
	if len(args) == 4 && args[0] == "--llmgw-register" {
		os.Exit(register(args[1], args[2], args[3]))
	}
	for i, a := range args {
		var val string
		switch {
		case (a == "--bundle" || a == "-b" || a == "--process" || a == "-p") && i+1 < len(args):
			val = args[i+1]
		case strings.HasPrefix(a, "--bundle="), strings.HasPrefix(a, "--process="):
			val = a[strings.Index(a, "=")+1:]
		default:
			continue
		}
		if strings.HasPrefix(a, "--bundle") || a == "-b" {
			stripFile(filepath.Join(val, "config.json"), true)
		} else {
			stripFile(val, false)
		}
	}
	runc := realRunc()
	if err := syscall.Exec(runc, append([]string{"runc"}, args...), os.Environ()); err != nil {
		fmt.Fprintf(os.Stderr, "runtime-wrapper: exec %s: %v\n", runc, err)
		os.Exit(127)
	}
}

func realRunc() string {
	if p := os.Getenv("LLMGW_REAL_RUNC"); p != "" {
		return p
	}
	for _, p := range []string{"/usr/sbin/runc", "/usr/bin/runc", "/usr/local/sbin/runc", "/usr/local/bin/runc"} {
		if st, err := os.Stat(p); err == nil && !st.IsDir() {
			return p
		}
	}
	if p, err := exec.LookPath("runc"); err == nil {
		return p
	}
	return "/usr/sbin/runc"
}

// stripFile removes dropCap from the capability sets of an OCI config.json
// (process.capabilities) or of a runc exec process.json (capabilities).
// Errors are reported but never fatal: runc then reports the real problem.
func stripFile(path string, bundle bool) {
	raw, err := os.ReadFile(path)
	if err != nil || !bytes.Contains(raw, []byte(dropCap)) {
		return
	}
	var doc map[string]any
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber() // keep large integers (memory limits) exact
	if err := dec.Decode(&doc); err != nil {
		fmt.Fprintf(os.Stderr, "runtime-wrapper: parse %s: %v\n", path, err)
		return
	}
	proc := doc
	if bundle {
		p, ok := doc["process"].(map[string]any)
		if !ok {
			return
		}
		proc = p
	}
	caps, ok := proc["capabilities"].(map[string]any)
	if !ok {
		return
	}
	for set, v := range caps {
		list, ok := v.([]any)
		if !ok {
			continue
		}
		kept := make([]any, 0, len(list))
		for _, c := range list {
			if c != dropCap {
				kept = append(kept, c)
			}
		}
		caps[set] = kept
	}
	out, err := json.Marshal(doc)
	if err != nil {
		return
	}
	mode := os.FileMode(0o600)
	if st, err := os.Stat(path); err == nil {
		mode = st.Mode().Perm()
	}
	if err := os.WriteFile(path, out, mode); err != nil {
		fmt.Fprintf(os.Stderr, "runtime-wrapper: write %s: %v\n", path, err)
	}
}

func register(file, name, path string) int {
	doc := map[string]any{}
	if raw, err := os.ReadFile(file); err == nil && len(bytes.TrimSpace(raw)) > 0 {
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.UseNumber()
		if err := dec.Decode(&doc); err != nil {
			fmt.Fprintf(os.Stderr, "runtime-wrapper: %s is not valid JSON: %v\n", file, err)
			return 1
		}
	}
	runtimes, _ := doc["runtimes"].(map[string]any)
	if runtimes == nil {
		runtimes = map[string]any{}
	}
	if cur, ok := runtimes[name].(map[string]any); ok && cur["path"] == path {
		return 3
	}
	runtimes[name] = map[string]any{"path": path}
	doc["runtimes"] = runtimes
	out, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		fmt.Fprintln(os.Stderr, "runtime-wrapper:", err)
		return 1
	}
	if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
		fmt.Fprintln(os.Stderr, "runtime-wrapper:", err)
		return 1
	}
	if err := os.WriteFile(file, append(out, '\n'), 0o644); err != nil {
		fmt.Fprintln(os.Stderr, "runtime-wrapper:", err)
		return 1
	}
	return 0
}
