package deploy

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/rulefmt"
	"github.com/prometheus/prometheus/promql/parser"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"

	"github.com/ingest-dev/ingest/internal/bitrix/engine"
	"github.com/ingest-dev/ingest/internal/habr"
	"github.com/ingest-dev/ingest/internal/metrics"
	"github.com/ingest-dev/ingest/internal/social"
	"github.com/ingest-dev/ingest/internal/status"
)

// prometheusRule is the Prometheus Operator's PrometheusRule; its spec is checked by
// Prometheus' own rule parser.
type prometheusRule struct {
	APIVersion string            `json:"apiVersion"`
	Kind       string            `json:"kind"`
	Metadata   metav1.ObjectMeta `json:"metadata"`
	Spec       json.RawMessage   `json:"spec"`
}

// monitoring renders deploy/monitoring: the rule groups, parsed and validated the way
// `promtool check rules` does (rulefmt.Parse, unknown fields refused, every expression and
// template checked), and the dashboard.
func monitoring(t *testing.T) (*rulefmt.RuleGroups, dashboard) {
	t.Helper()
	var groups *rulefmt.RuleGroups
	var dash dashboard
	for _, doc := range render(t, filesys.MakeFsOnDisk(), "monitoring") {
		var meta struct{ Kind string }
		if err := yaml.Unmarshal(doc, &meta); err != nil {
			t.Fatal(err)
		}
		switch meta.Kind {
		case "PrometheusRule":
			var pr prometheusRule
			strict(t, doc, &pr)
			if pr.APIVersion != "monitoring.coreos.com/v1" {
				t.Errorf("PrometheusRule apiVersion %q", pr.APIVersion)
			}
			spec, err := yaml.JSONToYAML(pr.Spec)
			if err != nil {
				t.Fatal(err)
			}
			var errs []error
			groups, errs = rulefmt.Parse(spec, false, model.UTF8Validation, promql(), slog.New(slog.NewTextHandler(io.Discard, nil)))
			for _, err := range errs {
				t.Errorf("prometheusrule.yaml: %v", err)
			}
		case "ConfigMap":
			var cm corev1.ConfigMap
			strict(t, doc, &cm)
			if cm.Labels["grafana_dashboard"] != "1" {
				t.Errorf("dashboard ConfigMap lacks the label grafana_dashboard=1 Grafana's sidecar loads")
			}
			dec := json.NewDecoder(strings.NewReader(cm.Data["grafana-dashboard.json"]))
			if err := dec.Decode(&dash); err != nil {
				t.Fatalf("grafana-dashboard.json: %v", err)
			}
		default:
			t.Fatalf("deploy/monitoring renders a %s: add its checks to this test", meta.Kind)
		}
	}
	if groups == nil || dash.UID == "" {
		t.Fatal("deploy/monitoring lacks the PrometheusRule or the dashboard")
	}
	return groups, dash
}

func promql() parser.Parser { return parser.NewParser(parser.Options{}) }

// exported lists the series ingest writes, from a textfile a run would leave, plus the rules'
// recorded series.
func exported(t *testing.T, groups *rulefmt.RuleGroups) map[string]bool {
	t.Helper()
	m := metrics.New()
	m.RecordsExtracted.WithLabelValues("e").Inc()
	m.ImportOK.WithLabelValues("e").Inc()
	m.ImportErr.WithLabelValues("e").Inc()
	m.RetryAttempts.WithLabelValues("e").Inc()
	m.VerifyMismatch.WithLabelValues("e").Inc()
	m.CustomFieldsCreated.WithLabelValues("e").Inc()
	m.Processed.WithLabelValues("e", "o").Inc()
	m.RecordsByStatus.WithLabelValues("s", "c", "st").Set(1)
	m.Phase("e", "p")()
	path := filepath.Join(t.TempDir(), "x.prom")
	if err := m.Start(context.Background(), "", path, "c"); err != nil {
		t.Fatal(err)
	}
	m.Finish(true)
	if err := m.WriteTextfile(path, "c"); err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, name := range metricNamesIn(t, path) {
		names[name] = true
	}
	for _, g := range groups.Groups {
		for _, r := range g.Rules {
			if r.Record != "" {
				names[r.Record] = true
			}
		}
	}
	return names
}

// knownLabels are the labels ingest's series carry (job and instance come from scraping; shard
// from a sharded command, TestShardLabelIsWritten).
var knownLabels = []string{"command", "shard", "entity", "phase", "outcome", "source", "scope", "status", "job", "instance"}

// checkExpr parses a PromQL expression and checks that it reads only series and labels ingest
// writes, and only statuses its pipelines have.
func checkExpr(t *testing.T, where, expr string, names map[string]bool) parser.Expr {
	t.Helper()
	e, err := promql().ParseExpr(expr)
	if err != nil {
		t.Errorf("%s: %v\n%s", where, err, expr)
		return nil
	}
	statuses := map[string]bool{}
	for _, m := range allMachines() {
		for _, s := range m {
			statuses[s] = true
		}
	}
	parser.Inspect(e, func(n parser.Node, _ []parser.Node) error {
		switch n := n.(type) {
		case *parser.VectorSelector:
			if !names[n.Name] {
				t.Errorf("%s: %q is not a series ingest writes", where, n.Name)
			}
			for _, m := range n.LabelMatchers {
				if m.Name != model.MetricNameLabel && !slices.Contains(knownLabels, m.Name) {
					t.Errorf("%s: label %q is not one ingest writes", where, m.Name)
				}
				if m.Name == "status" && m.Type == labels.MatchRegexp {
					for _, s := range strings.Split(m.Value, "|") {
						if !statuses[s] {
							t.Errorf("%s: %q is not a status of any pipeline", where, s)
						}
					}
				}
			}
		case *parser.AggregateExpr:
			for _, l := range n.Grouping {
				if !slices.Contains(knownLabels, l) {
					t.Errorf("%s: grouping by %q, not a label ingest writes", where, l)
				}
			}
		}
		return nil
	})
	return e
}

// allMachines lists the statuses of each pipeline.
func allMachines() [][]string {
	var out [][]string
	for _, m := range append([]*status.Machine{habr.Machine, engine.Machine}, social.Machines()...) {
		var ss []string
		for _, s := range m.Statuses {
			ss = append(ss, string(s))
		}
		out = append(out, ss)
	}
	return out
}

// metricNamesIn lists the metric families of a textfile.
func metricNamesIn(t *testing.T, path string) []string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	p := expfmt.NewTextParser(model.UTF8Validation)
	families, err := p.TextToMetricFamilies(f)
	if err != nil {
		t.Fatal(err)
	}
	return slices.Sorted(maps.Keys(families))
}

func TestPrometheusRules(t *testing.T) {
	t.Parallel()
	groups, _ := monitoring(t)
	names := exported(t, groups)
	alerts := map[string]bool{}
	type interval struct {
		command string         // a literal command label, or
		pattern *regexp.Regexp // a pattern of them
		seconds float64
	}
	var intervals []interval
	for _, g := range groups.Groups {
		for _, r := range g.Rules {
			where := r.Alert + r.Record
			e := checkExpr(t, where, r.Expr, names)
			if r.Alert != "" {
				alerts[r.Alert] = true
				if r.Annotations["summary"] == "" || r.Labels["severity"] == "" {
					t.Errorf("%s: needs a summary and a severity", r.Alert)
				}
			}
			if r.Record != "ingest:schedule_interval_seconds" || e == nil {
				continue
			}
			// Each interval rule: the interval is its largest number; the command comes from
			// label_replace's value or a command=~ matcher.
			var iv interval
			parser.Inspect(e, func(n parser.Node, path []parser.Node) error {
				switch n := n.(type) {
				case *parser.NumberLiteral:
					iv.seconds = max(iv.seconds, n.Val)
				case *parser.Call:
					if n.Func.Name == "label_replace" {
						iv.command = n.Args[2].(*parser.StringLiteral).Val
					}
				case *parser.VectorSelector:
					for _, m := range n.LabelMatchers {
						if m.Name == "command" && m.Type == labels.MatchRegexp {
							iv.pattern = regexp.MustCompile("^(?:" + m.Value + ")$")
						}
					}
				}
				return nil
			})
			intervals = append(intervals, iv)
		}
	}
	// The README's alerts: no success for two intervals, records stuck in a failure status,
	// a lock held too long.
	for _, want := range []string{"IngestNoRecentSuccess", "IngestRecordsStuckRetrying", "IngestRecordsNeedAPerson", "IngestRunLockHeldTooLong"} {
		if !alerts[want] {
			t.Errorf("no alert %s", want)
		}
	}
	// Every scheduled command has its interval, equal to its CronJob's schedule.
	for _, cj := range cronJobs(t) {
		label := metrics.CommandLabel(strings.Join(cj.Spec.JobTemplate.Spec.Template.Spec.Containers[0].Args, " "))
		found := false
		for _, iv := range intervals {
			if iv.command == label || iv.pattern != nil && iv.pattern.MatchString(label) {
				found = true
				if want := intervalSeconds(t, cj.Spec.Schedule); iv.seconds != float64(want) {
					t.Errorf("%s: the rules' interval is %gs, its schedule %q runs every %ds", label, iv.seconds, cj.Spec.Schedule, want)
				}
			}
		}
		if !found {
			t.Errorf("%s: no ingest:schedule_interval_seconds rule covers it", label)
		}
	}
}

// dashboard is the part of a Grafana dashboard this test reads.
type dashboard struct {
	UID        string `json:"uid"`
	Title      string `json:"title"`
	Templating struct {
		List []struct {
			Name string `json:"name"`
			Type string `json:"type"`
		} `json:"list"`
	} `json:"templating"`
	Panels []struct {
		ID         int    `json:"id"`
		Title      string `json:"title"`
		Datasource struct {
			UID string `json:"uid"`
		} `json:"datasource"`
		GridPos struct{ X, Y, W, H int } `json:"gridPos"`
		Targets []struct {
			Expr string `json:"expr"`
		} `json:"targets"`
	} `json:"panels"`
}

// grafanaVariable is a dashboard variable in an expression: $name or ${name}.
var grafanaVariable = regexp.MustCompile(`\$\{?(\w+)\}?`)

func TestGrafanaDashboard(t *testing.T) {
	t.Parallel()
	groups, dash := monitoring(t)
	names := exported(t, groups)
	vars := map[string]bool{}
	for _, v := range dash.Templating.List {
		vars[v.Name] = true
	}
	if !vars["datasource"] {
		t.Error("the dashboard has no datasource variable: it would be tied to one Prometheus")
	}
	ids := map[int]bool{}
	for _, p := range dash.Panels {
		where := p.Title
		if ids[p.ID] {
			t.Errorf("%s: panel id %d twice", where, p.ID)
		}
		ids[p.ID] = true
		if p.Datasource.UID != "${datasource}" {
			t.Errorf("%s: datasource %q, want ${datasource}", where, p.Datasource.UID)
		}
		if p.GridPos.W <= 0 || p.GridPos.H <= 0 || p.GridPos.X+p.GridPos.W > 24 {
			t.Errorf("%s: gridPos %+v", where, p.GridPos)
		}
		if len(p.Targets) == 0 {
			t.Errorf("%s: no query", where)
		}
		for _, q := range p.Targets {
			expr := grafanaVariable.ReplaceAllStringFunc(q.Expr, func(v string) string {
				name := grafanaVariable.FindStringSubmatch(v)[1]
				if !vars[name] {
					t.Errorf("%s: variable %s is not defined", where, v)
				}
				return ".*" // what "All" selects
			})
			checkExpr(t, where, expr, names)
		}
	}
}
