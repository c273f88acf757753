package gateway

import (
	"github.com/prometheus/client_golang/prometheus"
)

// registerLedgerHealth exports whether the ledger can commit and what its
// failures cost: records lost by requests that were served (fail-open, or in
// flight when the first commit failed) and requests refused without a record.
// They read g's fields at scrape time, once Start has set them.
func registerLedgerHealth(reg prometheus.Registerer, g *Gateway) {
	reg.MustRegister(
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "llmgw_usage_store_writable",
			Help: "1 while the usage ledger's commits succeed, 0 from a failed commit until one succeeds again."},
			func() float64 {
				if g.Ledger.Writable() != nil {
					return 0
				}
				return 1
			}),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "llmgw_usage_unrecorded_requests_total",
			Help: "Chat requests answered whose final usage record could not be written (the ledger's commit failed)."},
			func() float64 { return float64(g.Ledger.Stats().Unrecorded) }),
		// How the single writer keeps up: operations per transaction is
		// ops/transactions over any window, and the queue is what waits.
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "llmgw_usage_ledger_operations_total",
			Help: "Operations the usage ledger's writer applied (a request's begin and finish are one each)."},
			func() float64 { return float64(g.Ledger.Stats().Ops) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "llmgw_usage_ledger_transactions_total",
			Help: "Transactions the usage ledger's writer ran, failed ones included; operations_total / transactions_total is the mean batch."},
			func() float64 { return float64(g.Ledger.Stats().Batches) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "llmgw_usage_ledger_queued_operations",
			Help: "Operations waiting for the usage ledger's writer (the queue holds 8,192; a full queue makes requests wait)."},
			func() float64 { return float64(g.Ledger.Stats().Queued) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "llmgw_usage_store_refused_requests_total",
			Help: "Chat requests refused with 503 usage_store_unavailable because the ledger could not commit; they have no usage record."},
			func() float64 {
				if g.Server == nil {
					return 0
				}
				return float64(g.Server.RefusedUnrecorded())
			}),
	)
}

// newJournalLagHistogram measures how long a final record was a journal
// line only, from its Finish until the commit of its row
// (usage.Options.JournalLag). An OS crash inside it loses the record even
// where a committed row would have survived a checkpoint.
func newJournalLagHistogram() prometheus.Histogram {
	return prometheus.NewHistogram(prometheus.HistogramOpts{Name: "llmgw_usage_journal_commit_lag_seconds",
		Help:    "Time from a request's final usage record being journaled (before its last byte) to the commit of its row.",
		Buckets: []float64{.0005, .001, .0025, .005, .0075, .01, .025, .05, .1, .25, 1}})
}
