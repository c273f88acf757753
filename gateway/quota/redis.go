package quota

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net/url"
	"strconv"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"
)

// RedisOptions configures the shared store.
type RedisOptions struct {
	// URL is redis://[user@]host:port[/db] or rediss:// (TLS). A password
	// in the URL is refused: it would end up in process arguments and
	// logs. Pass it in Password (read from a file or the environment).
	URL      string
	Password string
	// Prefix starts every key the store writes (default "llmgw:"), so one
	// Redis can serve several installations.
	Prefix string
	// Timeout bounds each command (default 500ms): a store that does not
	// answer in time counts as unreachable, and the caller serves degraded
	// instead of holding the request.
	Timeout time.Duration
	// Grace is how long a window counter outlives its End and an idle
	// bucket outlives the moment it is full again (default 1 min), so that
	// replicas whose clocks differ a little still find it.
	Grace time.Duration
}

// Redis is the Store shared by every gateway replica: counters live in one
// Redis or Valkey primary and every Reserve and Settle is one Lua script,
// atomic on the server, one round trip.
type Redis struct {
	client  *redis.Client
	prefix  string
	grace   int64 // ms
	reserve *redis.Script
	settle  *redis.Script

	mu sync.Mutex
	// used is each window (or tally) counter's use as of this replica's
	// last Reserve: what a degraded replica starts from (degraded.go).
	used map[string]int64
}

// maxRemembered bounds Redis.used: past it the map starts over (only
// degraded mode reads it, and a window it forgot counts from zero there).
const maxRemembered = 100_000

// errInvalidLimit marks a call the store refused before any command: a
// failover must pass it up rather than take it for an outage.
var errInvalidLimit = errors.New("invalid limit")

var errPasswordInURL = errors.New("the quota store URL must not contain a password: pass it in a file or the environment")

// NewRedis connects lazily: it checks the options and returns at once; the
// first command (or Ping) dials.
func NewRedis(o RedisOptions) (*Redis, error) {
	if err := CheckRedisURL(o.URL); err != nil {
		return nil, err
	}
	opts, err := redis.ParseURL(o.URL)
	if err != nil {
		return nil, fmt.Errorf("quota store %s: %w", RedactURL(o.URL), err)
	}
	if o.Timeout <= 0 {
		o.Timeout = 500 * time.Millisecond
	}
	if o.Grace <= 0 {
		o.Grace = time.Minute
	}
	if o.Prefix == "" {
		o.Prefix = "llmgw:"
	}
	opts.Password = o.Password
	opts.DialTimeout = 2 * o.Timeout
	opts.ReadTimeout, opts.WriteTimeout = o.Timeout, o.Timeout
	opts.PoolTimeout = o.Timeout
	opts.ContextTimeoutEnabled = true
	// Both scripts are safe to run twice (a reservation is found by its
	// id, a settled one is gone), so one retry on a broken connection
	// cannot take a counter twice. An id-less Reserve retried after a lost
	// answer may: it errs on the side of refusing.
	opts.MaxRetries = 1
	opts.MinIdleConns = 2
	opts.DisableIdentity = true // CLIENT SETINFO is Redis 7.2+
	opts.MaintNotificationsConfig = &maintnotifications.Config{Mode: maintnotifications.ModeDisabled}
	quietRedisLogs()
	return &Redis{
		client:  redis.NewClient(opts),
		prefix:  o.Prefix,
		grace:   o.Grace.Milliseconds(),
		reserve: redis.NewScript(reserveScript),
		settle:  redis.NewScript(settleScript),
		used:    map[string]int64{},
	}, nil
}

// CheckRedisURL refuses what NewRedis would refuse, without connecting:
// a URL that does not parse, another scheme, or a password in it.
func CheckRedisURL(raw string) error {
	u, err := url.Parse(raw)
	if err != nil {
		// url's error quotes the whole URL, password included.
		return errors.New("quota store: the URL does not parse")
	}
	if _, ok := u.User.Password(); ok {
		return errPasswordInURL
	}
	if u.Scheme != "redis" && u.Scheme != "rediss" {
		return fmt.Errorf("quota store: scheme %q: want redis:// or rediss://", u.Scheme)
	}
	return nil
}

// RedactURL is u without its password, for logs and errors.
func RedactURL(u string) string {
	p, err := url.Parse(u)
	if err != nil {
		return "(unparsable URL)"
	}
	return p.Redacted()
}

// Ping checks that the store answers.
func (r *Redis) Ping(ctx context.Context) error {
	if err := r.client.Ping(ctx).Err(); err != nil {
		return fmt.Errorf("quota store: %w", err)
	}
	return nil
}

// Close closes the connections.
func (r *Redis) Close() error { return r.client.Close() }

func (r *Redis) reservationKey(id string) string { return r.prefix + "r:" + id }

// counterKey is where l's counter lives; a Tally's is its Window's.
func (r *Redis) counterKey(l Limit) string {
	if l.Kind == Bucket {
		return r.prefix + "b:" + l.Counter
	}
	return r.prefix + "w:" + l.Counter
}

// Reserve implements Store.
func (r *Redis) Reserve(ctx context.Context, id string, limits []Limit, ttl time.Duration, now time.Time) (Decision, error) {
	if len(limits) == 0 {
		return Decision{Allowed: true}, nil
	}
	remember := "1"
	if id == "" {
		remember = "0"
	} else if ttl < time.Millisecond {
		return Decision{}, fmt.Errorf("quota: %w: reservation %s needs a ttl of at least 1ms", errInvalidLimit, id)
	}
	keys := make([]string, 0, len(limits)+1)
	keys = append(keys, r.reservationKey(id))
	args := make([]any, 0, 4+5*len(limits))
	args = append(args, now.UnixMicro(), ttl.Milliseconds(), remember, r.grace)
	for i, l := range limits {
		if err := checkRedisLimit(l); err != nil {
			return Decision{}, fmt.Errorf("quota: %w %d: %w", errInvalidLimit, i, err)
		}
		for _, o := range limits[:i] {
			// The script checks each counter's room on its own; the
			// gateway never names one twice.
			if o.Counter == l.Counter {
				return Decision{}, fmt.Errorf("quota: %w: counter %s named twice", errInvalidLimit, l.Counter)
			}
		}
		keys = append(keys, r.counterKey(l))
		switch l.Kind {
		case Bucket:
			args = append(args, "b", strconv.FormatInt(l.Capacity, 10), strconv.FormatInt(l.Period.Microseconds(), 10),
				strconv.FormatInt(l.Amount, 10), "")
		case Tally:
			args = append(args, "t", "0", strconv.FormatInt(l.End.UnixMicro(), 10), strconv.FormatInt(l.Amount, 10), "")
		default:
			args = append(args, "w", strconv.FormatInt(l.Capacity, 10), strconv.FormatInt(l.End.UnixMicro(), 10),
				strconv.FormatInt(l.Amount, 10), strconv.FormatInt(l.Capacity-l.Amount, 10))
		}
	}
	res, err := r.reserve.Run(ctx, r.client, keys, args...).Slice()
	if err != nil {
		return Decision{}, fmt.Errorf("quota store: reserve: %w", err)
	}
	if len(res) != 3+len(limits) {
		return Decision{}, fmt.Errorf("quota store: reserve: unexpected answer of %d values for %d limits", len(res), len(limits))
	}
	ok, _ := res[0].(int64)
	idx, _ := res[1].(int64)
	us, _ := res[2].(int64)
	d := Decision{Allowed: ok == 1, States: make([]State, len(limits))}
	if !d.Allowed {
		d.Denied, d.RetryAfter = int(idx), time.Duration(us)*time.Microsecond
	}
	for i, l := range limits {
		raw, _ := res[3+i].(string)
		st, err := redisState(l, raw, now)
		if err != nil {
			return Decision{}, fmt.Errorf("quota store: reserve: counter %s: %w", l.Counter, err)
		}
		d.States[i] = st
	}
	r.remember(limits, d.States)
	return d, nil
}

// redisState is the State of l's counter from the script's answer: a
// bucket's tokens (a float), a window's or tally's use (an integer).
func redisState(l Limit, raw string, now time.Time) (State, error) {
	if l.Kind != Bucket {
		used, err := strconv.ParseInt(raw, 10, 64)
		if err != nil {
			return State{}, fmt.Errorf("use %q: %w", raw, err)
		}
		s := State{Reset: max(l.End.Sub(now), 0), Used: used}
		if l.Kind == Window {
			s.Limit = l.Capacity
			s.Remaining = max(subSat(l.Capacity, used), 0)
		}
		return s, nil
	}
	tokens, err := strconv.ParseFloat(raw, 64)
	if err != nil {
		return State{}, fmt.Errorf("tokens %q: %w", raw, err)
	}
	capacity := float64(l.Capacity)
	tokens = min(tokens, capacity)
	s := State{Limit: l.Capacity}
	if tokens >= 1 {
		s.Remaining = min(int64(math.Floor(tokens)), l.Capacity)
	}
	if tokens < capacity {
		// As the script computes a bucket's expiry: (cap-tokens)×period/cap.
		us := math.Ceil((capacity - tokens) * float64(l.Period.Microseconds()) / capacity)
		if us >= float64(math.MaxInt64/int64(time.Microsecond)) {
			s.Reset = time.Duration(math.MaxInt64)
		} else {
			s.Reset = time.Duration(us) * time.Microsecond
		}
	}
	return s, nil
}

// remember keeps the windows' (and tallies': the same counters) use the
// store answered with.
func (r *Redis) remember(limits []Limit, states []State) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for i, l := range limits {
		if !l.Kind.windowed() {
			continue
		}
		if len(r.used) >= maxRemembered {
			clear(r.used)
		}
		r.used[l.Counter] = states[i].Used
	}
}

// Used is a window's (or tally's) use as this replica last saw it on the
// store, in the answer of a Reserve that named it (allowed or refused).
func (r *Redis) Used(counter string) (int64, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	v, ok := r.used[counter]
	return v, ok
}

// Settle implements Store.
func (r *Redis) Settle(ctx context.Context, id string, actual []int64, now time.Time) error {
	if id == "" {
		return nil
	}
	args := make([]any, 0, 3+len(actual))
	args = append(args, now.UnixMicro(), r.grace)
	if actual == nil {
		args = append(args, "z") // release: zeros for however many limits it holds
	}
	for _, a := range actual {
		args = append(args, strconv.FormatInt(a, 10))
	}
	if err := r.settle.Run(ctx, r.client, []string{r.reservationKey(id)}, args...).Err(); err != nil {
		return fmt.Errorf("quota store: settle: %w", err)
	}
	return nil
}

// check refuses a limit the scripts could not compute with.
func checkRedisLimit(l Limit) error {
	switch {
	case l.Counter == "":
		return errors.New("no counter name")
	case l.Amount < 0 || (l.Capacity < 0 && l.Kind != Tally):
		return fmt.Errorf("counter %s: negative capacity or amount", l.Counter)
	case l.Kind == Bucket && (l.Capacity == 0 || l.Period < time.Microsecond):
		return fmt.Errorf("counter %s: a bucket needs a capacity and a period of at least 1µs", l.Counter)
	case l.Kind != Bucket && !l.Kind.windowed():
		return fmt.Errorf("counter %s: unknown kind %d", l.Counter, l.Kind)
	}
	return nil
}

var quietOnce sync.Once

// quietRedisLogs sends go-redis's own log lines (reconnects, pool notes)
// to slog at debug level instead of stderr: the gateway logs the store's
// state once per transition itself.
func quietRedisLogs() {
	quietOnce.Do(func() { redis.SetLogger(slogPrintf{}) })
}

type slogPrintf struct{}

func (slogPrintf) Printf(ctx context.Context, format string, v ...any) {
	slog.Default().DebugContext(ctx, "quota store client: "+fmt.Sprintf(format, v...))
}
