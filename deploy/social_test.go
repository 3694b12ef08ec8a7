package deploy

import (
	"slices"
	"strconv"
	"strings"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
)

// The social sync is sharded over an Indexed Job: as many pods as SOCIAL_SHARDS, each failing
// alone; enrichment runs unsharded. Secrets come from the Secret, never from the manifest.
func TestSocialCronJobs(t *testing.T) {
	t.Parallel()
	commands := map[string]bool{}
	for _, cj := range cronJobs(t) {
		name := cj.Name
		pod := cj.Spec.JobTemplate.Spec.Template.Spec
		args := strings.Join(pod.Containers[0].Args, " ")
		if !strings.HasPrefix(args, "social ") {
			continue
		}
		commands[args] = true
		env := map[string]string{}
		for _, e := range pod.Containers[0].Env {
			env[e.Name] = e.Value
			secret := strings.Contains(e.Name, "TOKEN") || strings.HasSuffix(e.Name, "_KEY")
			if secret && (e.Value != "" || e.ValueFrom == nil || e.ValueFrom.SecretKeyRef == nil) {
				t.Errorf("%s: %s must come from a Secret", name, e.Name)
			}
		}
		js := cj.Spec.JobTemplate.Spec
		if args != "social sync run" {
			continue
		}
		if js.CompletionMode == nil || *js.CompletionMode != batchv1.IndexedCompletion || js.Completions == nil ||
			js.Parallelism == nil || *js.Parallelism != *js.Completions {
			t.Errorf("%s: want completionMode Indexed with parallelism = completions", name)
			continue
		}
		if n, err := strconv.Atoi(env["SOCIAL_SHARDS"]); err != nil || n != int(*js.Completions) {
			t.Errorf("%s: SOCIAL_SHARDS %q must equal completions %d", name, env["SOCIAL_SHARDS"], *js.Completions)
		}
		if _, set := env["JOB_COMPLETION_INDEX"]; set {
			t.Errorf("%s: JOB_COMPLETION_INDEX is Kubernetes' to set", name)
		}
		if js.BackoffLimitPerIndex == nil {
			t.Errorf("%s: want backoffLimitPerIndex", name)
		}
	}
	for _, want := range []string{"social sync run", "social enrich submit", "social enrich poll"} {
		if !commands[want] {
			t.Errorf("no CronJob runs %q", want)
		}
	}
}

// failIndexCodes are the exit codes an Indexed Job's policy fails the index on; FailJob would
// stop every shard for one shard's exit code.
func failIndexCodes(t *testing.T, name string, p *batchv1.PodFailurePolicy) []int32 {
	t.Helper()
	var codes []int32
	for _, r := range p.Rules {
		if r.Action == batchv1.PodFailurePolicyActionFailJob {
			t.Errorf("%s: FailJob in an Indexed Job stops every shard; use FailIndex", name)
		}
		if r.Action == batchv1.PodFailurePolicyActionFailIndex && r.OnExitCodes != nil {
			codes = append(codes, r.OnExitCodes.Values...)
		}
	}
	return slices.Clip(codes)
}
