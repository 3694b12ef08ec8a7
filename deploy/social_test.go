package deploy

import (
	"bytes"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// indexed is what an Indexed Job adds to a job spec.
type indexed struct {
	Spec struct {
		JobTemplate struct {
			Spec struct {
				CompletionMode       string `json:"completionMode"`
				Completions          *int   `json:"completions"`
				Parallelism          *int   `json:"parallelism"`
				BackoffLimitPerIndex *int   `json:"backoffLimitPerIndex"`
				PodFailurePolicy     struct {
					Rules []struct {
						Action      string `json:"action"`
						OnExitCodes *struct {
							Values []int `json:"values"`
						} `json:"onExitCodes"`
					} `json:"rules"`
				} `json:"podFailurePolicy"`
			} `json:"spec"`
		} `json:"jobTemplate"`
	} `json:"spec"`
}

func TestSocialCronJobs(t *testing.T) {
	ms := loadFile(t, "social.yaml")
	raw, err := os.ReadFile("social.yaml")
	if err != nil {
		t.Fatal(err)
	}
	docs := bytes.Split(raw, []byte("\n---\n"))
	commands := map[string]bool{}
	i := 0
	for _, doc := range docs {
		if len(bytes.TrimSpace(stripComments(doc))) == 0 {
			continue
		}
		m := ms[i]
		i++
		if m.Kind != "CronJob" {
			t.Errorf("%s: a %s; social.yaml holds CronJobs", m.Metadata.Name, m.Kind)
			continue
		}
		checkCronJob(t, m)
		pod := m.Spec.JobTemplate.Spec.Template.Spec
		args := strings.Join(pod.Containers[0].Args, " ")
		commands[args] = true
		env := map[string]string{}
		for _, e := range pod.Containers[0].Env {
			env[e.Name] = e.Value
			secret := strings.Contains(e.Name, "TOKEN") || strings.HasSuffix(e.Name, "_KEY")
			if secret && (e.Value != "" || e.ValueFrom["secretKeyRef"] == nil) {
				t.Errorf("%s: %s must come from a Secret", m.Metadata.Name, e.Name)
			}
		}
		var ix indexed
		if err := yaml.Unmarshal(doc, &ix); err != nil {
			t.Fatal(err)
		}
		js := ix.Spec.JobTemplate.Spec
		if args != "social sync run" {
			continue
		}
		// The sync is sharded: an Indexed Job whose completions are the shards the command is
		// told of, every shard at once, each failing alone.
		if js.CompletionMode != "Indexed" || js.Completions == nil || js.Parallelism == nil || *js.Parallelism != *js.Completions {
			t.Errorf("%s: want completionMode Indexed with parallelism = completions", m.Metadata.Name)
			continue
		}
		if n, err := strconv.Atoi(env["SOCIAL_SHARDS"]); err != nil || n != *js.Completions {
			t.Errorf("%s: SOCIAL_SHARDS %q must equal completions %d", m.Metadata.Name, env["SOCIAL_SHARDS"], *js.Completions)
		}
		if _, set := env["JOB_COMPLETION_INDEX"]; set {
			t.Errorf("%s: JOB_COMPLETION_INDEX is Kubernetes' to set", m.Metadata.Name)
		}
		if js.BackoffLimitPerIndex == nil || pod.RestartPolicy != "Never" {
			t.Errorf("%s: want backoffLimitPerIndex (with restartPolicy Never)", m.Metadata.Name)
		}
		failIndex := false
		for _, r := range js.PodFailurePolicy.Rules {
			if r.Action == "FailJob" {
				t.Errorf("%s: FailJob would stop every shard for one shard's exit code; use FailIndex", m.Metadata.Name)
			}
			if r.Action == "FailIndex" && r.OnExitCodes != nil && slices.Contains(r.OnExitCodes.Values, 75) {
				failIndex = true
			}
		}
		if !failIndex {
			t.Errorf("%s: exit 75 (the shard's lock is held) must fail the index without retries", m.Metadata.Name)
		}
	}
	for _, want := range []string{"social sync run", "social enrich submit", "social enrich poll"} {
		if !commands[want] {
			t.Errorf("no CronJob runs %q", want)
		}
	}
}
