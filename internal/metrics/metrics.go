// Package metrics holds the unified metrics of seed 000 and the batch-job conventions of
// Prometheus: per run, counters by entity, phase durations, and the last success and completion
// timestamps, pushed to a Pushgateway and/or written as a node-exporter textfile.
package metrics

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/push"
	dto "github.com/prometheus/client_model/go"
)

// Metrics is one run's registry. Every counter carries an `entity` label ("habr_publications",
// "users", "groups", ...). Create one per run with New.
type Metrics struct {
	reg *prometheus.Registry

	// RecordsExtracted counts records read from the source (records_extracted_total).
	RecordsExtracted *prometheus.CounterVec
	// ImportOK counts records that reached their final good status (records_import_ok_total).
	ImportOK *prometheus.CounterVec
	// ImportErr counts records that reached a final error status (records_import_err_total).
	ImportErr *prometheus.CounterVec
	// RetryAttempts counts retries of any kind (retry_attempts_total).
	RetryAttempts *prometheus.CounterVec
	// VerifyMismatch counts verification mismatches (verify_sample_mismatch_total).
	VerifyMismatch *prometheus.CounterVec
	// CustomFieldsCreated counts custom fields created on the target (custom_fields_created_total).
	CustomFieldsCreated *prometheus.CounterVec
	// Processed counts per-record outcomes of a run by name, e.g. outcome="extract_failed":
	// the seed's counters have no place for temporary and structural failures.
	Processed *prometheus.CounterVec
	// DurationMS is how long each phase of each entity took in this run (duration_ms).
	DurationMS *prometheus.GaugeVec

	lastSuccess    prometheus.Gauge
	lastCompletion prometheus.Gauge
}

// New returns an empty registry with every metric registered.
func New() *Metrics {
	m := &Metrics{reg: prometheus.NewRegistry()}
	counter := func(name, help string, labels ...string) *prometheus.CounterVec {
		c := prometheus.NewCounterVec(prometheus.CounterOpts{Name: name, Help: help}, labels)
		m.reg.MustRegister(c)
		return c
	}
	m.RecordsExtracted = counter("records_extracted_total", "Records extracted from the source.", "entity")
	m.ImportOK = counter("records_import_ok_total", "Records imported (or processed) successfully.", "entity")
	m.ImportErr = counter("records_import_err_total", "Records that failed finally.", "entity")
	m.RetryAttempts = counter("retry_attempts_total", "Retry attempts.", "entity")
	m.VerifyMismatch = counter("verify_sample_mismatch_total", "Verification mismatches.", "entity")
	m.CustomFieldsCreated = counter("custom_fields_created_total", "Custom fields created on the target.", "entity")
	m.Processed = counter("records_processed_total", "Records processed in this run, by outcome.", "entity", "outcome")
	m.DurationMS = prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "duration_ms", Help: "Phase duration in milliseconds."}, []string{"entity", "phase"})
	m.lastSuccess = prometheus.NewGauge(prometheus.GaugeOpts{Name: "ingest_last_success_timestamp_seconds", Help: "When the command last succeeded."})
	m.lastCompletion = prometheus.NewGauge(prometheus.GaugeOpts{Name: "ingest_last_completion_timestamp_seconds", Help: "When the command last finished, successfully or not."})
	m.reg.MustRegister(m.DurationMS, m.lastCompletion)
	return m
}

// Phase starts timing a phase; call the returned function when it ends.
func (m *Metrics) Phase(entity, phase string) func() {
	start := time.Now()
	return func() {
		m.DurationMS.WithLabelValues(entity, phase).Set(float64(time.Since(start).Milliseconds()))
	}
}

// Finish stamps the completion time, and the success time when succeeded. Call it once, at the
// end of the run, before Push or WriteTextfile.
func (m *Metrics) Finish(succeeded bool) {
	m.lastCompletion.SetToCurrentTime()
	if succeeded {
		m.lastSuccess.SetToCurrentTime()
		m.reg.MustRegister(m.lastSuccess)
	}
}

// Push adds this run's metrics to the Pushgateway group job="ingest", command=<command>. It
// uses POST (add), so a failed run never erases the last success timestamp of an earlier one.
func (m *Metrics) Push(ctx context.Context, gatewayURL, command string) error {
	err := push.New(gatewayURL, "ingest").Gatherer(m.reg).Grouping("command", command).AddContext(ctx)
	if err != nil {
		return fmt.Errorf("push metrics to pushgateway: %w", err)
	}
	return nil
}

// WriteTextfile writes the metrics atomically in the text format node-exporter's textfile
// collector reads.
func (m *Metrics) WriteTextfile(path string) error {
	if err := prometheus.WriteToTextfile(path, m.reg); err != nil {
		return fmt.Errorf("write metrics textfile %s: %w", path, err)
	}
	return nil
}

// Snapshot flattens the counters and gauges recorded so far into "name{label=value}" -> value,
// leaving out timestamps. It is what a run stores in runs.counters and logs when it ends.
func (m *Metrics) Snapshot() map[string]float64 {
	out := map[string]float64{}
	families, err := m.reg.Gather()
	if err != nil {
		return out
	}
	for _, f := range families {
		if strings.HasSuffix(f.GetName(), "_timestamp_seconds") {
			continue
		}
		for _, s := range f.GetMetric() {
			out[f.GetName()+labels(s.GetLabel())] = value(s)
		}
	}
	return out
}

func labels(ls []*dto.LabelPair) string {
	if len(ls) == 0 {
		return ""
	}
	parts := make([]string, len(ls))
	for i, l := range ls {
		parts[i] = l.GetName() + "=" + l.GetValue()
	}
	sort.Strings(parts)
	return "{" + strings.Join(parts, ",") + "}"
}

func value(s *dto.Metric) float64 {
	switch {
	case s.GetCounter() != nil:
		return s.GetCounter().GetValue()
	case s.GetGauge() != nil:
		return s.GetGauge().GetValue()
	}
	return 0
}
