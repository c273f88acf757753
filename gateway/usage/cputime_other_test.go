//go:build !(linux || darwin || freebsd || netbsd || openbsd || dragonfly)

package usage

import "time"

func processCPU() time.Duration { return 0 }
