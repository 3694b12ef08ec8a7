// Package deploy holds the Kubernetes manifests; its tests render them the way
// `kubectl apply -k` does, decode every object strictly into the Kubernetes API types, and check
// the properties README.md and the runbook rely on, so an edit cannot silently drop one.
package deploy

import (
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	psapi "k8s.io/pod-security-admission/api"
	"k8s.io/pod-security-admission/policy"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"
)

// imageName is the image every container runs; kustomization.yaml pins its version.
const imageName = "ghcr.io/ingest-dev/ingest"

// render builds a kustomization directory as `kubectl apply -k DIR` would and returns its
// objects as YAML documents.
func render(t *testing.T, fsys filesys.FileSystem, dir string) [][]byte {
	t.Helper()
	k := krusty.MakeKustomizer(krusty.MakeDefaultOptions())
	m, err := k.Run(fsys, dir)
	if err != nil {
		t.Fatalf("kustomize build %s: %v", dir, err)
	}
	var docs [][]byte
	for _, r := range m.Resources() {
		b, err := r.AsYAML()
		if err != nil {
			t.Fatal(err)
		}
		docs = append(docs, b)
	}
	return docs
}

// strict decodes doc into v, refusing any field v's type does not have: a misspelt or
// misplaced field in a manifest is an error here rather than silently dropped by the API server.
func strict(t *testing.T, doc []byte, v any) {
	t.Helper()
	if err := yaml.UnmarshalStrict(doc, v); err != nil {
		t.Fatalf("decode %T strictly: %v\n%s", v, err, doc)
	}
}

// pipelines are the components of deploy/kustomization.yaml, one per pipeline.
var pipelines = []string{"habr", "bitrix", "social"}

// renderPipelines renders deploy/ as a team that keeps only these pipelines in its
// kustomization.yaml's components would apply it: the same files, in memory, with that list.
func renderPipelines(t *testing.T, keep ...string) [][]byte {
	t.Helper()
	mem := filesys.MakeFsInMemory()
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".yaml") {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if path == "kustomization.yaml" {
			var k map[string]any
			if err := yaml.Unmarshal(b, &k); err != nil {
				return err
			}
			var comps []string
			for _, p := range keep {
				comps = append(comps, "components/"+p)
			}
			k["components"] = comps
			if b, err = yaml.Marshal(k); err != nil {
				return err
			}
		}
		return mem.WriteFile(filepath.Join("/deploy", path), b)
	})
	if err != nil {
		t.Fatal(err)
	}
	return render(t, mem, "/deploy")
}

// cronJobs renders deploy/ as it is and decodes each object, failing on any kind but CronJob.
func cronJobs(t *testing.T) []batchv1.CronJob {
	t.Helper()
	return decodeCronJobs(t, render(t, filesys.MakeFsOnDisk(), "."))
}

// decodeCronJobs decodes rendered objects, failing on any kind but CronJob.
func decodeCronJobs(t *testing.T, docs [][]byte) []batchv1.CronJob {
	t.Helper()
	var out []batchv1.CronJob
	for _, doc := range docs {
		var meta struct{ APIVersion, Kind string }
		if err := yaml.Unmarshal(doc, &meta); err != nil {
			t.Fatal(err)
		}
		if meta.APIVersion != "batch/v1" || meta.Kind != "CronJob" {
			t.Fatalf("deploy/ renders a %s %s: add its checks to this test", meta.APIVersion, meta.Kind)
		}
		var cj batchv1.CronJob
		strict(t, doc, &cj)
		out = append(out, cj)
	}
	return out
}

// intervalSeconds is the shortest gap between two runs of a simple cron schedule: "*/N * * * *"
// (every N minutes), "M * * * *" (hourly) or "M H * * *" (daily).
func intervalSeconds(t *testing.T, schedule string) int64 {
	t.Helper()
	f := strings.Fields(schedule)
	if len(f) != 5 {
		t.Fatalf("schedule %q: want 5 fields", schedule)
	}
	var n int64
	switch {
	case strings.HasPrefix(f[0], "*/") && f[1] == "*":
		if _, err := fmt.Sscan(f[0][2:], &n); err != nil {
			t.Fatalf("schedule %q: %v", schedule, err)
		}
		return n * 60
	case f[1] == "*":
		return 3600
	case f[2] == "*" && f[3] == "*" && f[4] == "*":
		return 86400
	}
	t.Fatalf("schedule %q: add its interval to this test", schedule)
	return 0
}

func TestCronJobs(t *testing.T) {
	t.Parallel()
	commands := map[string]bool{}
	for _, cj := range cronJobs(t) {
		name, s := cj.Name, cj.Spec
		if len(name) > 52 {
			t.Errorf("%s: CronJob names are limited to 52 characters", name)
		}
		if s.ConcurrencyPolicy != batchv1.ForbidConcurrent {
			t.Errorf("%s: concurrencyPolicy = %q, want Forbid", name, s.ConcurrencyPolicy)
		}
		if s.StartingDeadlineSeconds == nil || *s.StartingDeadlineSeconds < 10 {
			t.Errorf("%s: startingDeadlineSeconds must be set and >= 10", name)
		}
		if s.TimeZone == nil || *s.TimeZone != "Etc/UTC" {
			t.Errorf("%s: timeZone must be Etc/UTC", name)
		}
		job := s.JobTemplate.Spec
		if job.BackoffLimit == nil {
			t.Errorf("%s: backoffLimit must be set", name)
		}
		if job.ActiveDeadlineSeconds == nil || *job.ActiveDeadlineSeconds >= intervalSeconds(t, s.Schedule) {
			t.Errorf("%s: activeDeadlineSeconds must be set and shorter than the schedule interval", name)
		}
		checkFailurePolicy(t, name, job)
		pod := job.Template.Spec
		if pod.RestartPolicy != corev1.RestartPolicyNever {
			t.Errorf("%s: restartPolicy = %q, want Never", name, pod.RestartPolicy)
		}
		// Covers the end of a stopped run: up to 30 s recording the outcome, then the push.
		if pod.TerminationGracePeriodSeconds == nil || *pod.TerminationGracePeriodSeconds < 45 {
			t.Errorf("%s: terminationGracePeriodSeconds must be set and cover the run's ending", name)
		}
		if pod.AutomountServiceAccountToken == nil || *pod.AutomountServiceAccountToken {
			t.Errorf("%s: automountServiceAccountToken must be false", name)
		}
		checkRestricted(t, name, job.Template)
		if len(pod.InitContainers) != 1 || strings.Join(pod.InitContainers[0].Args, " ") != "migrate up" {
			t.Errorf("%s: want one init container running `migrate up` (migrations on every upgrade)", name)
		}
		if len(pod.Containers) != 1 {
			t.Fatalf("%s: want one container", name)
		}
		for _, c := range append(slices.Clone(pod.InitContainers), pod.Containers...) {
			checkContainer(t, name, c)
		}
		command := strings.Join(pod.Containers[0].Args, " ")
		commands[command] = true
		if strings.HasPrefix(command, "bitrix ") {
			checkBitrix(t, name, cj)
		}
	}
	// The Bitrix24 migration is one CronJob, whatever entities are registered: fourteen
	// processes each with a leaky bucket of its own could overlap against one portal.
	for _, w := range []string{"discover habr", "extract habr", "bitrix migrate"} {
		if !commands[w] {
			t.Errorf("no CronJob runs %q", w)
		}
	}
	for c := range commands {
		if strings.HasPrefix(c, "bitrix ") && c != "bitrix migrate" {
			t.Errorf("a CronJob runs %q beside `bitrix migrate`: the migration is one process under one rate limit", c)
		}
	}
}

func checkFailurePolicy(t *testing.T, name string, job batchv1.JobSpec) {
	t.Helper()
	p := job.PodFailurePolicy
	var codes []int32
	switch {
	case p == nil:
	case job.CompletionMode != nil && *job.CompletionMode == batchv1.IndexedCompletion:
		codes = failIndexCodes(t, name, p)
	default:
		for _, r := range p.Rules {
			if r.Action == batchv1.PodFailurePolicyActionFailJob && r.OnExitCodes != nil && r.OnExitCodes.Operator == batchv1.PodFailurePolicyOnExitCodesOpIn {
				codes = append(codes, r.OnExitCodes.Values...)
			}
		}
	}
	for _, want := range []int32{2, 75, 78} {
		if !slices.Contains(codes, want) {
			t.Errorf("%s: exit %d must fail the Job (or, indexed, its index) without retries (podFailurePolicy)", name, want)
		}
	}
}

// checkRestricted runs the Pod Security admission's own checks at level "restricted".
func checkRestricted(t *testing.T, name string, tpl corev1.PodTemplateSpec) {
	t.Helper()
	e, err := policy.NewEvaluator(policy.DefaultChecks(), nil)
	if err != nil {
		t.Fatal(err)
	}
	lv := psapi.LevelVersion{Level: psapi.LevelRestricted, Version: psapi.LatestVersion()}
	if res := policy.AggregateCheckResults(e.EvaluatePod(lv, &tpl.ObjectMeta, &tpl.Spec)); !res.Allowed {
		t.Errorf("%s: Pod Security restricted refuses the pod: %s", name, res.ForbiddenReason())
	}
}

func checkContainer(t *testing.T, job string, c corev1.Container) {
	t.Helper()
	name := job + "/" + c.Name
	pinned := strings.HasPrefix(c.Image, imageName+"@sha256:")
	if tag, ok := strings.CutPrefix(c.Image, imageName+":"); ok && tag != "" && tag != "latest" {
		pinned = true
	}
	if !pinned {
		t.Errorf("%s: image %q is not pinned to a version of %s (kustomization.yaml images:)", name, c.Image, imageName)
	}
	sc := c.SecurityContext
	if sc == nil || sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem {
		t.Errorf("%s: readOnlyRootFilesystem must be true", name)
	}
	if c.Resources.Limits.Memory().IsZero() {
		t.Errorf("%s: a memory limit must be set", name)
	}
	found := false
	for _, e := range c.Env {
		if e.Name == "DATABASE_URL" {
			found = true
		}
		secret := e.Name == "DATABASE_URL" || strings.HasSuffix(e.Name, "WEBHOOK_URL")
		if secret && (e.Value != "" || e.ValueFrom == nil || e.ValueFrom.SecretKeyRef == nil) {
			t.Errorf("%s: %s must come from a Secret, not a literal", name, e.Name)
		}
		if e.Name == "DATABASE_URL" && e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil && e.ValueFrom.SecretKeyRef.Name != "ingest" {
			t.Errorf("%s: DATABASE_URL from the Secret %q, want ingest (every pipeline's)", name, e.ValueFrom.SecretKeyRef.Name)
		}
		if e.Name == "LOG_FORMAT" && e.Value != "json" {
			t.Errorf("%s: LOG_FORMAT = %q, want json", name, e.Value)
		}
	}
	if !found {
		t.Errorf("%s: DATABASE_URL is not set", name)
	}
}

// checkBitrix checks what the README promises of the Bitrix24 CronJobs: suspended until the
// migration window, with the webhook URLs from the Secret keys it names.
func checkBitrix(t *testing.T, name string, cj batchv1.CronJob) {
	t.Helper()
	if cj.Spec.Suspend == nil || !*cj.Spec.Suspend {
		t.Errorf("%s: Bitrix24 CronJobs are created suspended", name)
	}
	keys := map[string]string{}
	for _, e := range cj.Spec.JobTemplate.Spec.Template.Spec.Containers[0].Env {
		if e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil {
			keys[e.Name] = e.ValueFrom.SecretKeyRef.Key
		}
	}
	if keys["BITRIX_WEBHOOK_URL"] != "bitrix-webhook-url" || keys["TARGET_WEBHOOK_URL"] != "target-webhook-url" {
		t.Errorf("%s: webhook URLs from Secret keys %v, want bitrix-webhook-url and target-webhook-url", name, keys)
	}
}

// TestManifestsAreAppliedWithKustomize: a component's CronJobs alone lack what the patches add; its
// header says so, and the README applies the directory.
func TestManifestsAreAppliedWithKustomize(t *testing.T) {
	t.Parallel()
	for _, doc := range render(t, filesys.MakeFsOnDisk(), ".") {
		if bytes.Contains(doc, []byte(":latest")) {
			t.Errorf("a rendered object names :latest:\n%s", doc)
		}
	}
}
