package deploy

import (
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
)

// The README's deploy section is what a platform engineer follows: these tests hold it to the
// manifests, so that following it as written gives workloads that start.

// readmeSection returns the README's section under the heading "## name", up to the next one.
func readmeSection(t *testing.T, name string) string {
	t.Helper()
	raw, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	s := string(raw)
	i := strings.Index(s, "\n## "+name+"\n")
	if i < 0 {
		t.Fatalf("README.md has no section %q", name)
	}
	s = s[i+1:]
	if j := strings.Index(s[3:], "\n## "); j >= 0 {
		s = s[:j+3]
	}
	return s
}

// codeBlocks returns the fenced code blocks of lang in text, with continued lines joined.
func codeBlocks(text, lang string) []string {
	var out []string
	for _, part := range strings.Split(text, "```"+lang+"\n")[1:] {
		block, _, _ := strings.Cut(part, "```")
		out = append(out, strings.ReplaceAll(block, "\\\n", " "))
	}
	return out
}

// keyRef is one key a container reads from a Secret or a ConfigMap (kind).
type keyRef struct {
	kind, name, key string
	optional        bool
	where           string
}

// keyRefs lists every Secret and ConfigMap key the CronJobs' containers read.
func keyRefs(t *testing.T, cjs []batchv1.CronJob) []keyRef {
	t.Helper()
	var out []keyRef
	for _, cj := range cjs {
		pod := cj.Spec.JobTemplate.Spec.Template.Spec
		for _, c := range append(slices.Clone(pod.InitContainers), pod.Containers...) {
			where := cj.Name + "/" + c.Name
			if len(c.EnvFrom) > 0 {
				t.Errorf("%s: envFrom reads keys no test can check against the README; name each variable", where)
			}
			for _, e := range c.Env {
				if e.ValueFrom == nil {
					continue
				}
				if s := e.ValueFrom.SecretKeyRef; s != nil {
					out = append(out, keyRef{"Secret", s.Name, s.Key, s.Optional != nil && *s.Optional, where + " " + e.Name})
				}
				if m := e.ValueFrom.ConfigMapKeyRef; m != nil {
					out = append(out, keyRef{"ConfigMap", m.Name, m.Key, m.Optional != nil && *m.Optional, where + " " + e.Name})
				}
			}
		}
	}
	return out
}

// createdKeys parses the README's `kubectl create secret generic NAME` and `kubectl create
// configmap NAME` commands: kind/name -> the keys of their --from-literal and --from-file.
func createdKeys(t *testing.T, section string) map[string][]string {
	t.Helper()
	create := regexp.MustCompile(`kubectl create (secret generic|configmap) (\S+)(.*)`)
	key := regexp.MustCompile(`--from-(?:literal|file)=([A-Za-z0-9_.-]+)=`)
	out := map[string][]string{}
	for _, block := range codeBlocks(section, "sh") {
		for _, line := range strings.Split(block, "\n") {
			m := create.FindStringSubmatch(line)
			if m == nil {
				continue
			}
			kind := map[string]string{"secret generic": "Secret", "configmap": "ConfigMap"}[m[1]]
			for _, k := range key.FindAllStringSubmatch(m[3], -1) {
				out[kind+"/"+m[2]] = append(out[kind+"/"+m[2]], k[1])
			}
		}
	}
	return out
}

// optionalKeys parses the README's table of optional keys: "| Secret `ingest` | `a`, `b` | ...".
func optionalKeys(section string) map[string][]string {
	row := regexp.MustCompile("(?m)^\\| (Secret|ConfigMap) `([^`]+)` \\| ([^|]+) \\|")
	key := regexp.MustCompile("`([^`]+)`")
	out := map[string][]string{}
	for _, m := range row.FindAllStringSubmatch(section, -1) {
		for _, k := range key.FindAllStringSubmatch(m[3], -1) {
			out[m[1]+"/"+m[2]] = append(out[m[1]+"/"+m[2]], k[1])
		}
	}
	return out
}

// forAlerts lists keys the workloads may do without but the README's promises may not: the
// alerts in deploy/monitoring read series that only reach Prometheus through the Pushgateway.
var forAlerts = []string{"ConfigMap/ingest/pushgateway-url"}

// TestReadmeCreatesEveryKey renders each pipeline's component alone, as a team that runs only
// that pipeline applies deploy/, with the Secrets and ConfigMap the README's commands create:
// every key a workload needs must be among those of the Secret `ingest` (every pipeline's) and
// the pipeline's own `ingest-PIPELINE`, every optional one must be named in the README, and
// every key the commands create must be read by some workload (a misspelt key would leave the
// real one unset).
func TestReadmeCreatesEveryKey(t *testing.T) {
	t.Parallel()
	section := readmeSection(t, "Deployment")
	created, optional := createdKeys(t, section), optionalKeys(section)
	if len(created["Secret/ingest"]) == 0 {
		t.Fatal("README's deploy section creates no Secret ingest: has its kubectl create command changed form?")
	}
	owner := func(obj string) string { // "" for every pipeline's objects
		_, name, _ := strings.Cut(obj, "/")
		return strings.TrimPrefix(strings.TrimPrefix(name, "ingest"), "-")
	}
	for obj := range created {
		if p := owner(obj); p != "" && !slices.Contains(pipelines, p) {
			t.Errorf("README creates %s: name it ingest (every pipeline) or ingest-PIPELINE, one of %v", obj, pipelines)
		}
	}
	read := map[string]bool{}
	for _, p := range pipelines {
		cjs := decodeCronJobs(t, renderPipelines(t, p))
		if len(cjs) == 0 {
			t.Errorf("the component %s alone renders no CronJob", p)
		}
		for _, cj := range cjs {
			if src := cj.Labels["ingest.dev/source"]; src != p {
				t.Errorf("the component %s renders %s, labelled ingest.dev/source=%q: each CronJob belongs to its pipeline's component", p, cj.Name, src)
			}
		}
		seen := map[string]bool{}
		for _, r := range keyRefs(t, cjs) {
			obj := r.kind + "/" + r.name
			read[obj+"/"+r.key] = true
			if seen[obj+"/"+r.key] {
				continue // one message per key, naming the first workload that reads it
			}
			seen[obj+"/"+r.key] = true
			switch {
			case owner(obj) != "" && owner(obj) != p:
				t.Errorf("%s (component %s) reads %s %q key %q: a team that runs only %s would need another pipeline's object", r.where, p, r.kind, r.name, r.key, p)
			case slices.Contains(created[obj], r.key):
			case r.optional && slices.Contains(optional[obj], r.key):
			case r.optional:
				t.Errorf("%s reads %s %q key %q, optional, which README's deploy section does not name (its table of optional keys)", r.where, r.kind, r.name, r.key)
			default:
				t.Errorf("%s needs %s %q key %q, which README's commands do not create: its pods would not start (CreateContainerConfigError)", r.where, r.kind, r.name, r.key)
			}
		}
	}
	for obj, keys := range created {
		for _, k := range keys {
			if !read[obj+"/"+k] {
				t.Errorf("README's commands create %s key %q, which no workload reads", obj, k)
			}
		}
	}
	for _, k := range forAlerts {
		obj, key := k[:strings.LastIndex(k, "/")], k[strings.LastIndex(k, "/")+1:]
		if !slices.Contains(created[obj], key) {
			t.Errorf("README's commands do not create %s key %q: the metrics never reach Prometheus and no alert can fire", obj, key)
		}
	}
}

// TestReadmeSettingsReachThePods: every variable of README's Configuration table is set by a
// manifest (a literal, or a ConfigMap or Secret key), or has a default there, or is named in
// the deploy section as one the manifests leave unset; so no setting of a pod is neither
// settable nor known.
func TestReadmeSettingsReachThePods(t *testing.T) {
	t.Parallel()
	deploySection := readmeSection(t, "Deployment")
	set := map[string]bool{}
	for _, cj := range cronJobs(t) {
		pod := cj.Spec.JobTemplate.Spec.Template.Spec
		for _, c := range append(slices.Clone(pod.InitContainers), pod.Containers...) {
			for _, e := range c.Env {
				set[e.Name] = true
			}
		}
	}
	set["JOB_COMPLETION_INDEX"] = true // Kubernetes sets it in an Indexed Job's pods
	row := regexp.MustCompile("(?m)^\\|\\s*(`[^|]*?)\\s*\\|[^|]*\\|([^|]*)\\|")
	name := regexp.MustCompile("`([A-Z][A-Z0-9_]+)`")
	n := 0
	for _, m := range row.FindAllStringSubmatch(readmeSection(t, "Configuration"), -1) {
		def := strings.TrimSpace(m[2])
		for _, v := range name.FindAllStringSubmatch(m[1], -1) {
			n++
			switch {
			case set[v[1]]:
			case def != "" && def != "(required)":
			case strings.Contains(deploySection, "`"+v[1]+"`"):
			default:
				t.Errorf("%s: no manifest sets it, it has no default in Configuration, and README's deploy section does not say the manifests leave it unset", v[1])
			}
		}
	}
	if n < 20 {
		t.Fatalf("found %d variables in README's Configuration table: has its form changed?", n)
	}
}

// TestReadmeNamesAnOfflineCheck: the deploy section tells how to see and check what would be
// applied without a cluster.
func TestReadmeNamesAnOfflineCheck(t *testing.T) {
	t.Parallel()
	section := readmeSection(t, "Deployment")
	for _, want := range []string{"kubectl kustomize deploy/", "make test-deploy"} {
		if !strings.Contains(section, want) {
			t.Errorf("README's deploy section does not name %q, the check that needs no cluster", want)
		}
	}
}

// minorVersions are the Kubernetes minor versions the fields the manifests may use need (on by
// default: beta or GA).
var minorVersions = []struct {
	field string
	minor int
	used  func(batchv1.CronJob) bool
}{
	{"podFailurePolicy", 26, func(cj batchv1.CronJob) bool { return cj.Spec.JobTemplate.Spec.PodFailurePolicy != nil }},
	{"timeZone", 27, func(cj batchv1.CronJob) bool { return cj.Spec.TimeZone != nil }},
	{"backoffLimitPerIndex", 29, func(cj batchv1.CronJob) bool { return cj.Spec.JobTemplate.Spec.BackoffLimitPerIndex != nil }},
	{"podFailurePolicy action FailIndex", 29, func(cj batchv1.CronJob) bool {
		p := cj.Spec.JobTemplate.Spec.PodFailurePolicy
		return p != nil && slices.ContainsFunc(p.Rules, func(r batchv1.PodFailurePolicyRule) bool { return r.Action == batchv1.PodFailurePolicyActionFailIndex })
	}},
	{"successPolicy", 31, func(cj batchv1.CronJob) bool { return cj.Spec.JobTemplate.Spec.SuccessPolicy != nil }},
	{"managedBy", 32, func(cj batchv1.CronJob) bool { return cj.Spec.JobTemplate.Spec.ManagedBy != nil }},
	{"podReplacementPolicy", 29, func(cj batchv1.CronJob) bool { return cj.Spec.JobTemplate.Spec.PodReplacementPolicy != nil }},
}

// TestReadmePrerequisites: the minimum Kubernetes version the README states covers every field
// the manifests use, the standalone kustomize its commands run is named, and its crontab
// example gives each command a textfile of its own.
func TestReadmePrerequisites(t *testing.T) {
	t.Parallel()
	section := readmeSection(t, "Deployment")
	m := regexp.MustCompile(`Kubernetes 1\.(\d+) or newer`).FindStringSubmatch(section)
	if m == nil {
		t.Fatal("README's deploy section states no minimum Kubernetes version (\"Kubernetes 1.N or newer\")")
	}
	stated, _ := strconv.Atoi(m[1])
	for _, cj := range cronJobs(t) {
		for _, v := range minorVersions {
			if v.used(cj) && v.minor > stated {
				t.Errorf("%s uses %s, which needs Kubernetes 1.%d; README states 1.%d", cj.Name, v.field, v.minor, stated)
			}
		}
	}
	if strings.Contains(section, "kustomize edit") && !strings.Contains(section, "standalone") {
		t.Error("README runs `kustomize edit` without saying it needs the standalone kustomize (kubectl's has no edit)")
	}

	crons := codeBlocks(section, "cron")
	if len(crons) == 0 {
		t.Fatal("README's deploy section has no crontab example (```cron)")
	}
	textfile := regexp.MustCompile(`METRICS_TEXTFILE=(\S+)`)
	shared, files := "", map[string]string{}
	for _, line := range strings.Split(crons[0], "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		tf := textfile.FindStringSubmatch(line)
		_, command, isJob := strings.Cut(line, "/ingest ")
		switch {
		case !isJob && tf != nil:
			shared = tf[1]
		case isJob && tf != nil:
			if other, ok := files[tf[1]]; ok && !strings.HasSuffix(tf[1], "/") {
				t.Errorf("crontab: %q and %q write one textfile, %s: each run would erase the other's series", other, command, tf[1])
			}
			files[tf[1]] = command
		case isJob && !strings.HasSuffix(shared, "/") && len(files) > 0:
			t.Errorf("crontab: %q shares METRICS_TEXTFILE=%s with other lines: make it a directory (ending in /) or give each line its own", command, shared)
		case isJob:
			files[shared] = command
		}
	}
	if len(files) == 0 {
		t.Error("crontab example runs no ingest command")
	}
}
