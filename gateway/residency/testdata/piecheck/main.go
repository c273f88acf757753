// Command piecheck is built by the package's tests as a position-independent
// executable: its loader writes relocated pointers into read-only data, the
// one case where a read-only mapping of the executable is not the file's
// copy. It releases, then leans on that data (interfaces, type switches,
// maps, reflection) and prints "ok" only if all of it still holds.
package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"reflect"
	"sort"
	"strings"

	"github.com/llmgw/llmgw/gateway/residency"
)

type shape interface{ area() float64 }
type square struct{ side float64 }
type circle struct{ r float64 }

func (s square) area() float64 { return s.side * s.side }
func (c circle) area() float64 { return 3 * c.r * c.r }

var table = map[string]shape{"sq": square{2}, "ci": circle{1}}

func main() {
	res, err := residency.Release()
	if err != nil {
		fmt.Println("release:", err)
		os.Exit(1)
	}
	var sum float64
	keys := make([]string, 0, len(table))
	for k := range table {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		switch v := table[k].(type) {
		case square, circle:
			sum += v.area()
		}
	}
	e := fmt.Errorf("wrapped: %w", fs.ErrNotExist)
	if sum != 7 || !errors.Is(e, fs.ErrNotExist) || reflect.TypeOf(square{}).Name() != "square" ||
		strings.ToUpper("ok") != "OK" || res.Advised == 0 {
		fmt.Println("broken after release", sum, e, res.Advised)
		os.Exit(1)
	}
	fmt.Println("ok")
}
