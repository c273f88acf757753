package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/prometheus/procfs"
)

// proc is a child process: a mock, the reverse proxy, a gateway or a sidecar.
type proc struct {
	name string
	bin  string
	args []string
	cmd  *exec.Cmd
	log  string // its stdout and stderr
	done chan struct{}
	err  error
	fs   procfs.Proc
}

// startProc starts bin with args; its output goes to dir/name.log. The
// child gets SIGTERM if this process dies first, so an interrupted run
// leaves nothing behind.
func startProc(dir, name, bin string, args ...string) (*proc, error) {
	return launch(filepath.Join(dir, name+".log"), os.O_TRUNC, name, bin, args)
}

// restart stops p cleanly and starts it again.
func (p *proc) restart(timeout time.Duration) (*proc, error) {
	if err := p.stop(timeout); err != nil {
		return nil, err
	}
	return p.again()
}

// again starts p's command anew (p stopped), its output appended to the
// same log.
func (p *proc) again() (*proc, error) {
	return launch(p.log, os.O_APPEND, p.name, p.bin, p.args)
}

func launch(logPath string, mode int, name, bin string, args []string) (*proc, error) {
	f, err := os.OpenFile(logPath, os.O_WRONLY|os.O_CREATE|mode, 0o600)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = f, f
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting %s: %w", name, err)
	}
	p := &proc{name: name, bin: bin, args: args, cmd: cmd, log: logPath, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		close(p.done)
	}()
	if p.fs, err = procfs.NewProc(cmd.Process.Pid); err != nil {
		_ = p.stop(time.Second)
		return nil, fmt.Errorf("%s: /proc: %w", name, err)
	}
	return p, nil
}

func (p *proc) pid() int { return p.cmd.Process.Pid }

func (p *proc) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// stop sends SIGTERM and waits; past timeout it kills. It returns the
// process's exit error (nil for a clean exit after SIGTERM).
func (p *proc) stop(timeout time.Duration) error {
	if p.exited() {
		return fmt.Errorf("%s had already exited: %v%s", p.name, p.err, p.tail())
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
		if p.err != nil {
			return fmt.Errorf("%s: %w%s", p.name, p.err, p.tail())
		}
		return nil
	case <-time.After(timeout):
		_ = p.cmd.Process.Kill()
		<-p.done
		return fmt.Errorf("%s did not stop within %s after SIGTERM; killed", p.name, timeout)
	}
}

// tail is the end of the process's log, for error messages.
func (p *proc) tail() string {
	b, err := os.ReadFile(p.log)
	if err != nil || len(b) == 0 {
		return ""
	}
	if len(b) > 1500 {
		b = b[len(b)-1500:]
	}
	return "\n--- " + p.name + " log (end) ---\n" + strings.TrimSpace(string(b))
}

// cpu is the process's user+system CPU time so far (10 ms resolution).
func (p *proc) cpu() (time.Duration, error) {
	st, err := p.fs.Stat()
	if err != nil {
		return 0, fmt.Errorf("%s: %w", p.name, err)
	}
	return time.Duration(st.CPUTime() * float64(time.Second)), nil
}

// memInfo is a process's resident memory in bytes.
type memInfo struct {
	rss, hwm uint64
	// file is the part of rss that maps files (RssFile): for these
	// processes the pages of their own binary the kernel has mapped in,
	// which any process started from the same binary pays for alike.
	file uint64
}

// mem returns the process's resident set now, its high-water mark and its
// file-backed part.
func (p *proc) mem() (memInfo, error) {
	st, err := p.fs.NewStatus()
	if err != nil {
		return memInfo{}, fmt.Errorf("%s: %w", p.name, err)
	}
	return memInfo{rss: st.VmRSS, hwm: st.VmHWM, file: st.RssFile}, nil
}

// selfCPU is this benchmark process's CPU time, the client's share.
func selfCPU() time.Duration {
	p, err := procfs.Self()
	if err != nil {
		return 0
	}
	st, err := p.Stat()
	if err != nil {
		return 0
	}
	return time.Duration(st.CPUTime() * float64(time.Second))
}

// connsTo counts the process's established TCP connections whose remote
// port is one of ports: its pooled upstream connections.
func (p *proc) connsTo(ports ...int) (int, error) {
	targets, err := p.fs.FileDescriptorTargets()
	if err != nil {
		return 0, err
	}
	inodes := map[uint64]bool{}
	for _, t := range targets {
		if s, ok := strings.CutPrefix(t, "socket:["); ok {
			if n, err := strconv.ParseUint(strings.TrimSuffix(s, "]"), 10, 64); err == nil {
				inodes[n] = true
			}
		}
	}
	fs, err := procfs.NewDefaultFS()
	if err != nil {
		return 0, err
	}
	const established = 1
	n := 0
	for _, read := range []func() (procfs.NetTCP, error){fs.NetTCP, fs.NetTCP6} {
		lines, err := read()
		if err != nil {
			if errors.Is(err, os.ErrNotExist) {
				continue
			}
			return 0, err
		}
		for _, l := range lines {
			if l.St != established || !inodes[l.Inode] {
				continue
			}
			for _, port := range ports {
				if l.RemPort == uint64(port) {
					n++
				}
			}
		}
	}
	return n, nil
}

// freePort asks the kernel for a free loopback port. Another process could
// take it before the child binds it; startup then fails loudly.
func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// waitReady polls url until it answers 200, the process exits or timeout.
func waitReady(ctx context.Context, p *proc, url string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	c := &http.Client{Timeout: time.Second}
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return err
		}
		resp, err := c.Do(req)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		if p.exited() {
			return fmt.Errorf("%s exited during startup: %v%s", p.name, p.err, p.tail())
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s not ready at %s after %s%s", p.name, url, timeout, p.tail())
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}
