package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// proc is a child process: a mock, the reverse proxy or a gateway.
type proc struct {
	name string
	cmd  *exec.Cmd
	log  string // its stdout and stderr
	done chan struct{}
	err  error
}

// startProc starts bin with args, its output in dir/name.log. The child gets
// SIGTERM if this process dies first, so an interrupted run leaves nothing
// behind.
func startProc(dir, name, bin string, args ...string) (*proc, error) {
	return startProcEnv(dir, name, bin, nil, args...)
}

// startProcEnv is startProc with env added to this process's environment.
func startProcEnv(dir, name, bin string, env []string, args ...string) (*proc, error) {
	logPath := filepath.Join(dir, name+".log")
	f, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	cmd := exec.Command(bin, args...)
	if len(env) > 0 {
		cmd.Env = append(os.Environ(), env...)
	}
	cmd.Stdout, cmd.Stderr = f, f
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting %s: %w", name, err)
	}
	p := &proc{name: name, cmd: cmd, log: logPath, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		close(p.done)
	}()
	return p, nil
}

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

// clockTicks is USER_HZ, the unit of /proc/PID/stat's CPU times: 100 on
// every Linux architecture Go supports.
const clockTicks = 100

// cpu is the process's user+system CPU time so far (10 ms resolution).
func (p *proc) cpu() time.Duration { return procCPU(strconv.Itoa(p.cmd.Process.Pid)) }

// selfCPU is this process's CPU time: the client's share of the work.
func selfCPU() time.Duration { return procCPU("self") }

func procCPU(pid string) time.Duration {
	b, err := os.ReadFile("/proc/" + pid + "/stat")
	if err != nil {
		return 0
	}
	d, _ := parseStatCPU(b)
	return d
}

// parseStatCPU reads utime and stime (fields 14 and 15) of /proc/PID/stat.
// The command name (field 2) may hold spaces and parentheses, so fields are
// counted from the last ')'.
func parseStatCPU(stat []byte) (time.Duration, error) {
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 {
		return 0, fmt.Errorf("no command name in /proc/PID/stat")
	}
	f := strings.Fields(string(stat[i+1:])) // f[0] is field 3 (state)
	if len(f) < 13 {
		return 0, fmt.Errorf("/proc/PID/stat has %d fields after the name", len(f))
	}
	var ticks uint64
	for _, s := range f[11:13] {
		n, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("/proc/PID/stat: %w", err)
		}
		ticks += n
	}
	return time.Duration(ticks) * time.Second / clockTicks, nil
}

// memInfo is a process's resident memory in bytes (/proc/PID/status).
type memInfo struct {
	rss  uint64 // VmRSS
	anon uint64 // RssAnon: heap, stacks, runtime; what the process itself allocated
	hwm  uint64 // VmHWM: the peak of VmRSS
}

func (p *proc) mem() (memInfo, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", p.cmd.Process.Pid))
	if err != nil {
		return memInfo{}, fmt.Errorf("%s: %w", p.name, err)
	}
	return parseStatus(b)
}

// parseStatus reads VmRSS, RssAnon and VmHWM (in kB) from /proc/PID/status.
func parseStatus(status []byte) (memInfo, error) {
	var m memInfo
	fields := map[string]*uint64{"VmRSS:": &m.rss, "RssAnon:": &m.anon, "VmHWM:": &m.hwm}
	seen := 0
	sc := bufio.NewScanner(bytes.NewReader(status))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) != 3 || f[2] != "kB" || fields[f[0]] == nil {
			continue
		}
		kb, err := strconv.ParseUint(f[1], 10, 64)
		if err != nil {
			return m, fmt.Errorf("/proc/PID/status %s: %w", f[0], err)
		}
		*fields[f[0]] = kb * 1024
		seen++
	}
	if seen != len(fields) {
		return m, fmt.Errorf("/proc/PID/status lacks VmRSS, RssAnon or VmHWM")
	}
	return m, nil
}

// freePort asks the kernel for a free loopback port. Another process could
// take it before the child binds it; startup then fails loudly.
func freePort() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

// servingPorts picks the data and management addresses of a target that
// serves both (revproxy, a gateway).
func servingPorts() (addr, mgmt string, err error) {
	if addr, err = freePort(); err != nil {
		return "", "", err
	}
	if mgmt, err = freePort(); err != nil {
		return "", "", err
	}
	return addr, mgmt, nil
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
		if resp, err := c.Do(req); err == nil {
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

// Machine is what the numbers were measured on.
type Machine struct {
	CPU      string `json:"cpu"`
	CPUs     int    `json:"cpus"`
	MemTotal string `json:"mem_total"`
	Kernel   string `json:"kernel"`
	Go       string `json:"go"`     // this tool's toolchain
	Commit   string `json:"commit"` // git describe of the work tree, "-dirty" if changed
}

func machineInfo() Machine {
	m := Machine{CPU: "unknown", CPUs: runtime.NumCPU(), Go: runtime.Version(), Kernel: readTrim("/proc/sys/kernel/osrelease")}
	for _, l := range strings.Split(readTrim("/proc/cpuinfo"), "\n") {
		if k, v, ok := strings.Cut(l, ":"); ok && strings.TrimSpace(k) == "model name" {
			m.CPU = strings.TrimSpace(v)
			break
		}
	}
	for _, l := range strings.Split(readTrim("/proc/meminfo"), "\n") {
		if v, ok := strings.CutPrefix(l, "MemTotal:"); ok {
			m.MemTotal = strings.TrimSpace(v)
		}
	}
	if out, err := exec.Command("git", "describe", "--always", "--dirty").Output(); err == nil {
		m.Commit = strings.TrimSpace(string(out))
	}
	return m
}

func readTrim(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return "unknown"
	}
	return strings.TrimSpace(string(b))
}

// loadavg is the 1, 5 and 15 minute load average.
func loadavg() string {
	f := strings.Fields(readTrim("/proc/loadavg"))
	if len(f) < 3 {
		return "n/a"
	}
	return strings.Join(f[:3], " ")
}
