package specs

import (
	"context"
	"fmt"
	"io"
	"net/http"

	jsonv2 "github.com/go-json-experiment/json"

	"github.com/llmgw/llmgw/mockproviders"
)

// MockCalls reads GET /mock/calls of a mock provider.
func MockCalls(ctx context.Context, base string) (mockproviders.Calls, error) {
	var c mockproviders.Calls
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/mock/calls", nil)
	if err != nil {
		return c, err
	}
	resp, err := HTTP.Do(req)
	if err != nil {
		return c, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return c, err
	}
	if resp.StatusCode != http.StatusOK {
		return c, fmt.Errorf("GET %s/mock/calls: HTTP %d", base, resp.StatusCode)
	}
	return c, jsonv2.Unmarshal(body, &c)
}

// CallDelta is what a mock counted between two readings.
type CallDelta struct {
	Total    int64
	ByStatus map[string]int64
	ByFault  map[string]int64
}

func (d CallDelta) String() string {
	return fmt.Sprintf("total +%d, by_status %v, by_fault %v", d.Total, d.ByStatus, d.ByFault)
}

// Diff is after − before (keys whose count did not change are left out).
func Diff(before, after mockproviders.Calls) CallDelta {
	d := CallDelta{Total: after.Total - before.Total, ByStatus: map[string]int64{}, ByFault: map[string]int64{}}
	for k, v := range after.ByStatus {
		if n := v - before.ByStatus[k]; n != 0 {
			d.ByStatus[k] = n
		}
	}
	for k, v := range after.ByFault {
		if n := v - before.ByFault[k]; n != 0 {
			d.ByFault[k] = n
		}
	}
	return d
}
