package main

import (
	"debug/buildinfo"
	"os"
	"os/exec"
	"runtime"
	"strings"
)

// Machine is what the numbers were measured on.
type Machine struct {
	CPU        string `json:"cpu"`
	CPUs       int    `json:"cpus"`
	GOMAXPROCS int    `json:"gomaxprocs"`
	Hypervisor bool   `json:"hypervisor"`
	MemTotal   string `json:"mem_total"`
	Kernel     string `json:"kernel"`
	OS         string `json:"os"`
	Go         string `json:"go"`       // this tool's toolchain
	LlmgwGo    string `json:"llmgw_go"` // the llmgw binary's, from its build info
	Commit     string `json:"commit"`   // git describe of the work tree, "-dirty" if changed
}

func machineInfo(llmgwBin string) Machine {
	m := Machine{CPU: "unknown", CPUs: runtime.NumCPU(), GOMAXPROCS: runtime.GOMAXPROCS(0), Go: runtime.Version(),
		OS: runtime.GOOS + "/" + runtime.GOARCH, Kernel: readTrim("/proc/sys/kernel/osrelease")}
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			k, v, ok := strings.Cut(l, ":")
			switch k = strings.TrimSpace(k); {
			case !ok:
			case k == "model name" && m.CPU == "unknown":
				m.CPU = strings.TrimSpace(v)
			case k == "flags" && strings.Contains(" "+v+" ", " hypervisor "):
				m.Hypervisor = true
			}
		}
	}
	if b, err := os.ReadFile("/proc/meminfo"); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(l, "MemTotal:"); ok {
				m.MemTotal = strings.TrimSpace(v)
			}
		}
	}
	if bi, err := buildinfo.ReadFile(llmgwBin); err == nil {
		m.LlmgwGo = bi.GoVersion
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
