// Command flood measures how the usage ledger grows under a sustained flood
// at the gateway's default abuse limits (issue 11: "measure and document the
// disk used after a one-hour flood at the limit").
//
// It starts mock alpha and beta and a gateway (through `llmgw gateway`'s own
// flag parsing, so every limit and retention bound is the shipped default)
// with its ledger in a temporary directory, then for -duration sends:
//
//   - from 127.0.0.1, requests with a wrong key at -rate per second (default
//     10/s = the default --ip-rpm 600): each is refused 401 before any
//     provider call and leaves its one rejected record;
//   - from 127.0.0.2, requests with a valid key at -valid-rate per second
//     (default 1/s = the demo key's 60 rpm), which reach mock alpha.
//
// Every -sample it prints the records in the ledger, the live data, the
// database, WAL and shm bytes on disk, and the statuses each sender has seen.
// At the end it stops the gateway (a clean close checkpoints the WAL into the
// database file) and prints bytes per record and the extrapolation against
// --ledger-max-bytes. Arguments after "--" go to `llmgw gateway`.
//
//	go run ./hack/flood -duration 1h > /tmp/flood-1h.log 2>&1
//	go run ./hack/flood -duration 2m -sample 10s -rate 20 -- --ip-rpm 600
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"sort"
	"strings"
	"syscall"
	"time"
)

type config struct {
	duration, sample time.Duration
	rate, validRate  float64
	dir              string
	keep             bool
	gatewayFlags     []string
}

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "flood:", err)
		os.Exit(1)
	}
}

func run() error {
	var cfg config
	flag.DurationVar(&cfg.duration, "duration", time.Hour, "how long to flood")
	flag.DurationVar(&cfg.sample, "sample", time.Minute, "how often to sample the ledger")
	flag.Float64Var(&cfg.rate, "rate", 10, "wrong-key requests per second from 127.0.0.1 (the default --ip-rpm 600 is 10/s)")
	flag.Float64Var(&cfg.validRate, "valid-rate", 1, "valid-key requests per second from 127.0.0.2 (the demo key's 60 rpm is 1/s); 0 disables")
	flag.StringVar(&cfg.dir, "dir", "", "state directory (snapshot, ledger); default a new temporary directory")
	flag.BoolVar(&cfg.keep, "keep", false, "keep the state directory afterwards")
	flag.Parse()
	cfg.gatewayFlags = flag.Args()
	if cfg.rate <= 0 || cfg.validRate < 0 || cfg.duration <= 0 || cfg.sample <= 0 {
		return fmt.Errorf("-rate, -duration and -sample must be > 0, -valid-rate ≥ 0")
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	if cfg.dir == "" {
		d, err := os.MkdirTemp("", "llmgw-flood-")
		if err != nil {
			return err
		}
		cfg.dir = d
	} else if err := os.MkdirAll(cfg.dir, 0o700); err != nil {
		return err
	}
	if !cfg.keep {
		defer os.RemoveAll(cfg.dir)
	}
	st, err := startStack(ctx, cfg.dir, cfg.gatewayFlags)
	if err != nil {
		return err
	}
	stopped := false
	defer func() {
		if !stopped {
			_ = st.stop()
		}
	}()
	lr, err := openLedgerReader(st.dbPath)
	if err != nil {
		return err
	}
	defer lr.close()

	body := `{"model":"chat-alpha","messages":[{"role":"user","content":"hello from the flood"}]}`
	senders := []*sender{newSender("wrong-key", "127.0.0.1", st.url, wrongKey, body, cfg.rate)}
	if cfg.validRate > 0 {
		senders = append(senders, newSender("valid-key", "127.0.0.2", st.url, st.validKey, body, cfg.validRate))
	}
	fmt.Printf("# llmgw flood: %s, wrong key %.3g req/s from 127.0.0.1, valid key %.3g req/s from 127.0.0.2, sample every %s\n",
		cfg.duration, cfg.rate, cfg.validRate, cfg.sample)
	fmt.Printf("# gateway flags: defaults%s; ledger %s\n", flagsNote(cfg.gatewayFlags), st.dbPath)
	fmt.Printf("# started %s\n", time.Now().UTC().Format(time.RFC3339))
	fmt.Println(header(senders))

	start := time.Now()
	fctx, cancel := context.WithTimeout(ctx, cfg.duration)
	defer cancel()
	for _, s := range senders {
		s.start(fctx)
	}
	tick := time.NewTicker(cfg.sample)
	defer tick.Stop()
	last := ledgerSample{}
loop:
	for {
		select {
		case <-fctx.Done():
			break loop
		case <-tick.C:
			s, err := lr.sample(ctx)
			if err != nil {
				fmt.Fprintln(os.Stderr, "flood:", err)
				continue
			}
			last = s
			fmt.Println(row(time.Since(start), senders, s))
		}
	}
	for _, s := range senders {
		s.wait()
	}
	elapsed := time.Since(start)
	if s, err := lr.sample(context.Background()); err == nil {
		last = s
		fmt.Println(row(elapsed, senders, s))
	}
	outcomes, err := lr.recordsByOutcome(context.Background())
	if err != nil {
		return err
	}
	_ = lr.close()
	stopped = true
	if err := st.stop(); err != nil {
		return fmt.Errorf("gateway: %w", err)
	}
	closed := ledgerSample{dbBytes: fileSize(st.dbPath), walBytes: fileSize(st.dbPath + "-wal"),
		shmBytes: fileSize(st.dbPath + "-shm")}
	summarize(elapsed, senders, last, closed, outcomes)
	return nil
}

// wrongKey is shaped like a gateway key, so it costs the full lookup path,
// but no key has its prefix.
const wrongKey = "lgw_zzzzzzzzzz_floodfloodfloodfloodfloodfloodfloodflood"

func flagsNote(fl []string) string {
	if len(fl) == 0 {
		return ""
	}
	return " except " + strings.Join(fl, " ")
}

func header(senders []*sender) string {
	cols := []string{"elapsed"}
	for _, s := range senders {
		cols = append(cols, s.name+" sent", "200", "401", "429", "other", "err")
	}
	cols = append(cols, "records", "in_progress", "live_bytes", "db_bytes", "wal_bytes", "shm_bytes", "disk_bytes", "live_B/rec")
	return strings.Join(cols, "\t")
}

func row(elapsed time.Duration, senders []*sender, s ledgerSample) string {
	cols := []string{elapsed.Round(time.Second).String()}
	for _, snd := range senders {
		c := snd.counts()
		cols = append(cols, fmt.Sprint(c.sent), fmt.Sprint(c.byStatus[200]), fmt.Sprint(c.byStatus[401]),
			fmt.Sprint(c.byStatus[429]), fmt.Sprint(c.other()), fmt.Sprint(c.errors))
	}
	perRec := "-"
	if s.records > 0 {
		perRec = fmt.Sprintf("%.0f", float64(s.liveBytes())/float64(s.records))
	}
	cols = append(cols, fmt.Sprint(s.records), fmt.Sprint(s.inProgress), fmt.Sprint(s.liveBytes()),
		fmt.Sprint(s.dbBytes), fmt.Sprint(s.walBytes), fmt.Sprint(s.shmBytes), fmt.Sprint(s.diskBytes()), perRec)
	return strings.Join(cols, "\t")
}

func summarize(elapsed time.Duration, senders []*sender, running, closed ledgerSample, outcomes map[string]int64) {
	fmt.Printf("\n# summary after %s\n", elapsed.Round(time.Second))
	var sent int64
	for _, s := range senders {
		c := s.counts()
		sent += c.sent
		codes := make([]int, 0, len(c.byStatus))
		for code := range c.byStatus {
			codes = append(codes, code)
		}
		sort.Ints(codes)
		var parts []string
		for _, code := range codes {
			parts = append(parts, fmt.Sprintf("%d×%d", c.byStatus[code], code))
		}
		fmt.Printf("%s: sent %d (%s), transport errors %d, ticks skipped (sender busy) %d\n",
			s.name, c.sent, strings.Join(parts, ", "), c.errors, c.skipped)
	}
	keys := make([]string, 0, len(outcomes))
	for k := range outcomes {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	fmt.Println("records by status, http_status, error_type:")
	for _, k := range keys {
		fmt.Printf("  %s: %d\n", k, outcomes[k])
	}
	hours := elapsed.Hours()
	fmt.Printf("requests sent: %d; records: %d (%.0f per hour)\n", sent, running.records, float64(running.records)/hours)
	fmt.Printf("while running: live data %d B, db %d B + wal %d B + shm %d B = %d B on disk\n",
		running.liveBytes(), running.dbBytes, running.walBytes, running.shmBytes, running.diskBytes())
	fmt.Printf("after a clean stop: db %d B + wal %d B + shm %d B = %d B on disk\n",
		closed.dbBytes, closed.walBytes, closed.shmBytes, closed.diskBytes())
	if running.records > 0 {
		perRec := float64(closed.dbBytes) / float64(running.records)
		fmt.Printf("bytes per record (db file after the stop / records): %.1f\n", perRec)
		const maxBytes = 512 << 20 // --ledger-max-bytes default
		perHour := float64(running.records) / hours
		fmt.Printf("at this rate the default --ledger-max-bytes (512 MiB) holds ≈ %.0f records ≈ %.1f hours (%.1f days) of this flood\n",
			maxBytes/perRec, maxBytes/perRec/perHour, maxBytes/perRec/perHour/24)
	}
	fmt.Printf("# finished %s\n", time.Now().UTC().Format(time.RFC3339))
}
