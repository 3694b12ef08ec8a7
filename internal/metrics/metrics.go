// Package metrics holds the unified metrics of seed 000 and the batch-job conventions of
// Prometheus: per run, counters by entity, phase durations, and the last success and completion
// timestamps, pushed to a Pushgateway and/or written as a node-exporter textfile.
package metrics

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/push"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"google.golang.org/protobuf/proto"

	"github.com/ingest-dev/ingest/internal/httplimit"
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
	// TextCleaned counts records (pages, publications) stored with text Postgres could not store
	// cleaned out of them (records_text_cleaned_total, internal/pgtext): NUL, invalid UTF-8, lone
	// surrogates.
	TextCleaned *prometheus.CounterVec
	// Processed counts per-record outcomes of a run by name, e.g. outcome="extract_failed":
	// the seed's counters have no place for temporary and structural failures.
	Processed *prometheus.CounterVec
	// DurationMS is how long each phase of each entity took in this run (duration_ms).
	DurationMS *prometheus.GaugeVec

	// RecordsByStatus is how many records the command's pipeline holds in each status when the
	// run ends (ingest_records{source,scope,status}): what the "records stuck in a failure
	// status" alerts read.
	RecordsByStatus *prometheus.GaugeVec

	runStart       prometheus.Gauge
	lastSuccess    prometheus.Gauge
	lastCompletion prometheus.Gauge
}

const (
	lastSuccessName = "ingest_last_success_timestamp_seconds"
	runStartName    = "ingest_run_start_timestamp_seconds"
)

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
	m.TextCleaned = counter("records_text_cleaned_total", "Records stored with NUL, invalid UTF-8 or lone surrogates cleaned out of their text.", "entity")
	m.Processed = counter("records_processed_total", "Records processed in this run, by outcome.", "entity", "outcome")
	m.DurationMS = prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "duration_ms", Help: "Phase duration in milliseconds."}, []string{"entity", "phase"})
	m.lastSuccess = prometheus.NewGauge(prometheus.GaugeOpts{Name: lastSuccessName, Help: "When the command last succeeded."})
	m.lastCompletion = prometheus.NewGauge(prometheus.GaugeOpts{Name: "ingest_last_completion_timestamp_seconds", Help: "When the command last finished, successfully or not."})
	m.RecordsByStatus = prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "ingest_records",
		Help: "Records of the pipeline in each status when the run ended."}, []string{"source", "scope", "status"})
	m.runStart = prometheus.NewGauge(prometheus.GaugeOpts{Name: runStartName,
		Help: "When the command's latest run started (and took its lock); published at the start of the run."})
	m.reg.MustRegister(m.DurationMS, m.lastCompletion, m.RecordsByStatus, m.runStart)
	return m
}

// Phase starts timing a phase; call the returned function when it ends.
func (m *Metrics) Phase(entity, phase string) func() {
	start := time.Now()
	return func() {
		m.DurationMS.WithLabelValues(entity, phase).Set(float64(time.Since(start).Milliseconds()))
	}
}

// Start stamps the run's start and publishes it at once, to the Pushgateway and/or the
// textfile (either may be empty), so that a run that holds its lock for too long shows: its
// start is newer than its last completion. Everything else waits for the end of the run.
func (m *Metrics) Start(ctx context.Context, gatewayURL, textfile, command string) error {
	m.runStart.SetToCurrentTime()
	var errs []error
	if gatewayURL != "" {
		// A registry of its own: the run's other series are not known yet, and pushing them
		// empty would reset the last completion in the group.
		reg := prometheus.NewRegistry()
		reg.MustRegister(m.runStart)
		if err := grouping(gatewayURL, command).Gatherer(reg).AddContext(ctx); err != nil {
			errs = append(errs, fmt.Errorf("push run start to pushgateway: %w", err))
		}
	}
	if textfile != "" {
		if err := m.writeStartTextfile(textfile, command); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// writeStartTextfile rewrites the textfile an earlier run left with this run's start in it,
// keeping every other series (last success and completion above all) as it was.
func (m *Metrics) writeStartTextfile(path, command string) error {
	families, err := readTextfile(path)
	if err != nil {
		return err
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(m.runStart)
	fresh, err := (&Metrics{reg: reg}).gatherer(command).Gather()
	if err != nil {
		return fmt.Errorf("write metrics textfile %s: %w", path, err)
	}
	for _, f := range fresh {
		families[f.GetName()] = f
	}
	out := make([]*dto.MetricFamily, 0, len(families))
	for _, name := range slices.Sorted(maps.Keys(families)) {
		out = append(out, families[name])
	}
	g := prometheus.GathererFunc(func() ([]*dto.MetricFamily, error) { return out, nil })
	if err := prometheus.WriteToTextfile(path, g); err != nil {
		return fmt.Errorf("write metrics textfile %s: %w", path, err)
	}
	return nil
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

// KeepLastSuccess carries an earlier run's success time into a run that did not succeed, so a
// textfile rewritten by a failed run still holds ingest_last_success_timestamp_seconds: without
// it the staleness alert would have no series exactly while the job keeps failing. Call it after
// Finish(false); a zero t (never succeeded) leaves the series out.
func (m *Metrics) KeepLastSuccess(t time.Time) {
	if t.IsZero() {
		return
	}
	m.lastSuccess.Set(float64(t.UnixNano()) / 1e9)
	_ = m.reg.Register(m.lastSuccess) // already registered after a success: the value is set all the same
}

// CommandLabel is the value of the `command` label every series carries: the command's words
// joined by "_" ("extract_habr", "bitrix_users_run"), without its shard (ShardSuffix), which is
// a label of its own. A space would reach a Pushgateway as "+" (client_golang escapes grouping
// values with url.QueryEscape into a URL path).
func CommandLabel(command string) string {
	command, _, _ = SplitShard(command)
	return strings.Join(strings.Fields(command), "_")
}

// ShardSuffix names shard index of count in a command's run and lock names (" shard 0/4"); the
// metrics carry the index as the `shard` label and grouping key instead, so that the `command`
// label stays the same when the shard count changes. Empty when count is 1 or less.
func ShardSuffix(index, count int) string {
	if count <= 1 {
		return ""
	}
	return fmt.Sprintf(" shard %d/%d", index, count)
}

// SplitShard splits a command name made with ShardSuffix into the command and its shard;
// count is 0 for a command without one.
func SplitShard(command string) (cmd string, index, count int) {
	i := strings.LastIndex(command, " shard ")
	if i < 0 {
		return command, 0, 0
	}
	if _, err := fmt.Sscanf(command[i:], " shard %d/%d", &index, &count); err != nil || count < 1 || index < 0 || index >= count ||
		command[i:] != ShardSuffix(index, count) {
		return command, 0, 0
	}
	return command[:i], index, count
}

// grouping is the Pushgateway group of command: job="ingest", command, and shard when the
// command runs sharded.
func grouping(gatewayURL, command string) *push.Pusher {
	p := push.New(gatewayURL, "ingest").Client(gatewayClient(maxPushAnswer)).Grouping(commandLabel, CommandLabel(command))
	if _, index, count := SplitShard(command); count > 0 {
		p = p.Grouping(shardLabel, strconv.Itoa(index))
	}
	return p
}

// TextfileFor is the textfile a run of command writes for the METRICS_TEXTFILE value path: path
// itself, or, when path is a directory (an existing one, or any path ending in "/"), the file
// ingest_<command>.prom in it, so that every command line of a crontab may share one value
// and still write a file of its own (a file shared by two commands would lose one's series).
func TextfileFor(path, command string) string {
	if path == "" {
		return ""
	}
	if fi, err := os.Stat(path); strings.HasSuffix(path, "/") || (err == nil && fi.IsDir()) {
		name := strings.Map(func(r rune) rune {
			if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' {
				return r
			}
			return '_'
		}, strings.Join(strings.Fields(command), "_")) // the shard too: two shards on one node write two files
		return filepath.Join(path, "ingest_"+name+".prom")
	}
	return path
}

// gatherer returns the metrics with the label command=CommandLabel(command) (and shard, for a
// sharded command) on every series, so several commands' textfiles in one node-exporter
// directory never collide.
func (m *Metrics) gatherer(command string) prometheus.Gatherer {
	value := CommandLabel(command)
	_, index, count := SplitShard(command)
	return prometheus.GathererFunc(func() ([]*dto.MetricFamily, error) {
		families, err := m.reg.Gather()
		for _, f := range families {
			for _, s := range f.GetMetric() {
				s.Label = append(s.Label, &dto.LabelPair{Name: proto.String(commandLabel), Value: proto.String(value)})
				if count > 0 {
					s.Label = append(s.Label, &dto.LabelPair{Name: proto.String(shardLabel), Value: proto.String(strconv.Itoa(index))})
				}
				sort.Slice(s.Label, func(i, j int) bool { return s.Label[i].GetName() < s.Label[j].GetName() })
			}
		}
		return families, err
	})
}

// commandLabel names the label that says which command a series is from; shardLabel the shard
// of a sharded command.
const (
	commandLabel = "command"
	shardLabel   = "shard"
)

// Push adds this run's metrics to the Pushgateway group job="ingest", command=CommandLabel(command)
// (and shard, for a sharded command). It uses POST (add), so a failed run never erases the last
// success timestamp of an earlier one. A sharded command then deletes the groups of its shards at
// or above its shard count, left by runs before a reshard, whose series would otherwise stay
// forever.
func (m *Metrics) Push(ctx context.Context, gatewayURL, command string) error {
	// The gateway puts the grouping labels on every series; client_golang refuses series that
	// carry them already, so the registry goes as it is.
	err := grouping(gatewayURL, command).Gatherer(m.reg).AddContext(ctx)
	if err != nil {
		return fmt.Errorf("push metrics to pushgateway: %w", err)
	}
	if _, _, count := SplitShard(command); count > 0 {
		return DeleteStaleShards(ctx, gatewayURL, CommandLabel(command), count)
	}
	return nil
}

// DeleteStaleShards deletes the Pushgateway groups job="ingest", command=label whose shard is
// count or more: the gateway lists its groups at /api/v1/metrics.
func DeleteStaleShards(ctx context.Context, gatewayURL, label string, count int) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimSuffix(gatewayURL, "/")+"/api/v1/metrics", nil)
	if err != nil {
		return fmt.Errorf("list pushgateway groups: %w", err)
	}
	resp, err := gatewayClient(maxGatewayAnswer).Do(req)
	if err != nil {
		return fmt.Errorf("list pushgateway groups: %w", err)
	}
	defer resp.Body.Close()
	body, err := httplimit.ReadBody(resp, maxGatewayAnswer, "GET "+httplimit.Masked(req.URL, nil))
	if err != nil {
		return fmt.Errorf("list pushgateway groups: %w", err)
	}
	var list struct {
		Data []struct {
			Labels map[string]string `json:"labels"`
		} `json:"data"`
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("list pushgateway groups: HTTP %d", resp.StatusCode)
	}
	if err := json.Unmarshal(body, &list); err != nil {
		return fmt.Errorf("list pushgateway groups: %w", err)
	}
	var errs []error
	for _, g := range list.Data {
		shard, err := strconv.Atoi(g.Labels[shardLabel])
		if err != nil || g.Labels["job"] != "ingest" || g.Labels[commandLabel] != label || shard < count || len(g.Labels) != 3 {
			continue
		}
		if err := push.New(gatewayURL, "ingest").Client(gatewayClient(maxPushAnswer)).Grouping(commandLabel, label).Grouping(shardLabel, g.Labels[shardLabel]).Delete(); err != nil {
			errs = append(errs, fmt.Errorf("delete the pushgateway group of shard %d: %w", shard, err))
		}
	}
	return errors.Join(errs...)
}

// WriteTextfile writes the metrics, labelled with the command, atomically in the text format
// node-exporter's textfile collector reads.
func (m *Metrics) WriteTextfile(path, command string) error {
	if err := prometheus.WriteToTextfile(path, m.gatherer(command)); err != nil {
		return fmt.Errorf("write metrics textfile %s: %w", path, err)
	}
	return nil
}

// ReadLastSuccess returns ingest_last_success_timestamp_seconds from a textfile written earlier
// by WriteTextfile; zero when the file or the series is not there.
func ReadLastSuccess(path string) (time.Time, error) {
	families, err := readTextfile(path)
	if err != nil {
		return time.Time{}, err
	}
	var latest float64
	for _, s := range families[lastSuccessName].GetMetric() {
		latest = max(latest, s.GetGauge().GetValue())
	}
	if latest == 0 {
		return time.Time{}, nil
	}
	return time.Unix(0, int64(latest*1e9)), nil
}

// readTextfile parses a textfile; a missing file holds no families.
func readTextfile(path string) (map[string]*dto.MetricFamily, error) {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return map[string]*dto.MetricFamily{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read metrics textfile: %w", err)
	}
	defer f.Close()
	p := expfmt.NewTextParser(model.UTF8Validation)
	families, err := p.TextToMetricFamilies(f)
	if err != nil {
		return nil, fmt.Errorf("read metrics textfile %s: %w", path, err)
	}
	return families, nil
}

// Snapshot flattens the counters and gauges recorded so far into "name{label=value}" -> value,
// leaving out the job's own ingest_* series. It is what a run stores in runs.counters and logs when it ends.
func (m *Metrics) Snapshot() map[string]float64 {
	out := map[string]float64{}
	families, err := m.reg.Gather()
	if err != nil {
		return out
	}
	for _, f := range families {
		// The job's own series (timestamps, records by status) describe the command, not
		// what this run did.
		if strings.HasPrefix(f.GetName(), "ingest_") {
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

// Caps on the Pushgateway's answers after decompression. Its group listing, the largest, holds
// every group's series: a few MB for this program's commands and shards. A push is answered
// with nothing or a line of error, which the push library reads whole into its error message,
// ignoring a read error: its cap is what that message may quote.
const (
	maxGatewayAnswer = 64 << 20
	maxPushAnswer    = 4 << 10
)

// gatewayClient is the Pushgateway's HTTP client: answers capped at limit, redirects followed
// only within the gateway's origin (its URL may carry basic auth credentials).
func gatewayClient(limit int64) *http.Client {
	return &http.Client{
		Transport: httplimit.Capped(nil, limit),
		CheckRedirect: httplimit.SameOriginRedirects(func(r *http.Request) string {
			return "pushgateway " + r.Method + " " + httplimit.Masked(r.URL, nil)
		}, nil),
	}
}
