package caddymodule

import (
	"errors"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/toolgate/toolgate/gate"
)

// metrics are Toolgate's counters and the store's size gauge, on Caddy's
// metrics endpoint. Labels are bounded: action names come from the
// policy, reasons and outcomes from fixed sets; never a hold, person or
// argument.
type metrics struct {
	held     *prometheus.CounterVec
	refused  *prometheus.CounterVec
	decided  *prometheus.CounterVec
	runs     *prometheus.HistogramVec
	statuses *prometheus.CounterVec
	// shadowed counts what shadow mode would have done (gate/shadow.go).
	shadowed *prometheus.CounterVec
	// notices counts notices by their final fate (gate/notify.go).
	notices *prometheus.CounterVec
	// auditFailed counts audit events that could not be appended (the
	// gate went on without them).
	auditFailed *prometheus.CounterVec
	// storeBytes is the store's size on disk, sampled by the app.
	storeBytes prometheus.Gauge
}

// The collectors are process singletons: Caddy makes a new registry for
// each config load, and several apps may register into one.
var (
	metricsOnce sync.Once
	theMetrics  *metrics
)

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	const ns, sub = "caddy", "toolgate"
	metricsOnce.Do(func() {
		theMetrics = &metrics{
			held: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Subsystem: sub, Name: "holds_total",
				Help: "Gated calls held for a person's answer."}, []string{"action"}),
			refused: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Subsystem: sub, Name: "refusals_total",
				Help: "Gated calls refused without a hold (fail closed)."}, []string{"action", "reason"}),
			decided: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Subsystem: sub, Name: "decisions_total",
				Help: "Answers and settlements of holds."}, []string{"action", "decision"}),
			runs: prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: ns, Subsystem: sub, Name: "run_duration_seconds",
				Help: "Latency of released calls to the action's endpoint.", Buckets: prometheus.DefBuckets}, []string{"action"}),
			statuses: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Subsystem: sub, Name: "runs_total",
				Help: "Released calls by the endpoint's status class."}, []string{"action", "status"}),
			shadowed: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Subsystem: sub, Name: "shadow_total",
				Help: "Calls of actions in shadow mode, passed untouched, by what enforce mode would have done: card, form or refuse."}, []string{"action", "would"}),
			notices: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Subsystem: sub, Name: "notices_total",
				Help: "Notices to a policy's notify URL by event (held, settled) and result: delivered, failed (every attempt failed) or dropped."}, []string{"action", "event", "result"}),
			auditFailed: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Subsystem: sub, Name: "audit_failures_total",
				Help: "Audit events (shown, released, refused) that could not be appended to the audit log."}, []string{"event"}),
			storeBytes: prometheus.NewGauge(prometheus.GaugeOpts{Namespace: ns, Subsystem: sub, Name: "store_bytes",
				Help: "Size of the store of holds on disk, in bytes (sampled every 15s)."}),
		}
	})
	for _, c := range []prometheus.Collector{theMetrics.held, theMetrics.refused, theMetrics.decided, theMetrics.runs, theMetrics.statuses, theMetrics.shadowed, theMetrics.notices, theMetrics.auditFailed, theMetrics.storeBytes} {
		if err := reg.Register(c); err != nil {
			var are prometheus.AlreadyRegisteredError
			if !errors.As(err, &are) {
				return nil, err
			}
		}
	}
	return theMetrics, nil
}

func (m *metrics) Held(action string)              { m.held.WithLabelValues(action).Inc() }
func (m *metrics) Refused(action, reason string)   { m.refused.WithLabelValues(action, reason).Inc() }
func (m *metrics) Decided(action, decision string) { m.decided.WithLabelValues(action, decision).Inc() }
func (m *metrics) Shadowed(action, would string)   { m.shadowed.WithLabelValues(action, would).Inc() }
func (m *metrics) Notified(action, event, result string) {
	m.notices.WithLabelValues(action, event, result).Inc()
}
func (m *metrics) AuditFailed(event string) { m.auditFailed.WithLabelValues(event).Inc() }
func (m *metrics) Ran(action string, status int, d time.Duration) {
	m.runs.WithLabelValues(action).Observe(d.Seconds())
	class := "error"
	if status > 0 {
		class = strconv.Itoa(status/100) + "xx"
	}
	m.statuses.WithLabelValues(action, class).Inc()
}

// Interface guards
var (
	_ gate.Observer       = (*metrics)(nil)
	_ gate.ShadowObserver = (*metrics)(nil)
	_ gate.NotifyObserver = (*metrics)(nil)
)
