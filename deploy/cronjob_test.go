// Package deploy holds the Kubernetes manifests; its test checks the properties README.md and
// the runbook rely on, so an edit cannot silently drop one.
package deploy

import (
	"bytes"
	"fmt"
	"os"
	"regexp"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

type podSpec struct {
	RestartPolicy                 string `json:"restartPolicy"`
	TerminationGracePeriodSeconds *int   `json:"terminationGracePeriodSeconds"`
	Containers                    []struct {
		Args []string `json:"args"`
		Env  []struct {
			Name      string         `json:"name"`
			Value     string         `json:"value"`
			ValueFrom map[string]any `json:"valueFrom"`
		} `json:"env"`
	} `json:"containers"`
}

type jobSpec struct {
	BackoffLimit          *int `json:"backoffLimit"`
	ActiveDeadlineSeconds *int `json:"activeDeadlineSeconds"`
	Template              struct {
		Spec podSpec `json:"spec"`
	} `json:"template"`
}

type manifest struct {
	Kind     string `json:"kind"`
	Metadata struct {
		Name string `json:"name"`
	} `json:"metadata"`
	Spec struct {
		jobSpec
		Schedule                string `json:"schedule"`
		TimeZone                string `json:"timeZone"`
		ConcurrencyPolicy       string `json:"concurrencyPolicy"`
		StartingDeadlineSeconds *int   `json:"startingDeadlineSeconds"`
		JobTemplate             struct {
			Spec jobSpec `json:"spec"`
		} `json:"jobTemplate"`
	} `json:"spec"`
}

func load(t *testing.T) []manifest { return loadFile(t, "cronjob.yaml") }

// loadFile reads the manifests of one file of deploy/.
func loadFile(t *testing.T, name string) []manifest {
	t.Helper()
	raw, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	var out []manifest
	for _, doc := range bytes.Split(raw, []byte("\n---\n")) {
		if len(bytes.TrimSpace(stripComments(doc))) == 0 {
			continue
		}
		var m manifest
		// Only the fields checked here are typed; the rest of the manifest is ignored.
		if err := yaml.Unmarshal(doc, &m); err != nil {
			t.Fatalf("parse manifest: %v\n%s", err, doc)
		}
		out = append(out, m)
	}
	return out
}

func stripComments(b []byte) []byte {
	return regexp.MustCompile(`(?m)^\s*#.*$`).ReplaceAll(b, nil)
}

// intervalSeconds is the shortest gap between two runs of a simple cron schedule: "*/N * * * *"
// (every N minutes), "M * * * *" (hourly) or "M H * * *" (daily).
func intervalSeconds(t *testing.T, schedule string) int {
	t.Helper()
	f := strings.Fields(schedule)
	if len(f) != 5 {
		t.Fatalf("schedule %q: want 5 fields", schedule)
	}
	var n int
	switch {
	case strings.HasPrefix(f[0], "*/") && f[1] == "*":
		_, err := fmt.Sscan(f[0][2:], &n)
		if err != nil {
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
	ms := load(t)
	commands := map[string]bool{}
	var migrateJob bool
	for _, m := range ms {
		switch m.Kind {
		case "Job":
			job := m.Spec.jobSpec
			checkJob(t, m.Metadata.Name, job)
			if c := job.Template.Spec.Containers; len(c) == 1 && strings.Join(c[0].Args, " ") == "migrate up" {
				migrateJob = true
			}
		case "CronJob":
			checkCronJob(t, m)
			if c := m.Spec.JobTemplate.Spec.Template.Spec.Containers; len(c) == 1 {
				commands[strings.Join(c[0].Args, " ")] = true
			}
		}
	}
	if !migrateJob {
		t.Error("no Job runs `migrate up`")
	}
	for _, want := range []string{"discover habr", "extract habr", "bitrix users run", "bitrix groups run", "bitrix chats run"} {
		if !commands[want] {
			t.Errorf("no CronJob runs %q", want)
		}
	}
}

// checkCronJob checks the properties every CronJob must have (README "Deployment").
func checkCronJob(t *testing.T, m manifest) {
	t.Helper()
	name, s := m.Metadata.Name, m.Spec
	if len(name) > 52 {
		t.Errorf("%s: CronJob names are limited to 52 characters", name)
	}
	if s.ConcurrencyPolicy != "Forbid" {
		t.Errorf("%s: concurrencyPolicy = %q, want Forbid", name, s.ConcurrencyPolicy)
	}
	if s.StartingDeadlineSeconds == nil || *s.StartingDeadlineSeconds < 10 {
		t.Errorf("%s: startingDeadlineSeconds must be set and >= 10", name)
	}
	if s.TimeZone == "" {
		t.Errorf("%s: timeZone must be set", name)
	}
	job := s.JobTemplate.Spec
	checkJob(t, name, job)
	if job.ActiveDeadlineSeconds != nil && *job.ActiveDeadlineSeconds >= intervalSeconds(t, s.Schedule) {
		t.Errorf("%s: activeDeadlineSeconds %d is not shorter than the schedule interval", name, *job.ActiveDeadlineSeconds)
	}
}

func checkJob(t *testing.T, name string, job jobSpec) {
	t.Helper()
	if job.BackoffLimit == nil {
		t.Errorf("%s: backoffLimit must be set", name)
	}
	if job.ActiveDeadlineSeconds == nil {
		t.Errorf("%s: activeDeadlineSeconds must be set", name)
	}
	pod := job.Template.Spec
	if pod.RestartPolicy != "Never" {
		t.Errorf("%s: restartPolicy = %q, want Never", name, pod.RestartPolicy)
	}
	// Longer than one batch: for Habr 10 fetches of up to 30 s plus the 5 s pause.
	if pod.TerminationGracePeriodSeconds == nil || *pod.TerminationGracePeriodSeconds < 60 {
		t.Errorf("%s: terminationGracePeriodSeconds must be set and cover one batch", name)
	}
	for _, c := range pod.Containers {
		found := false
		for _, e := range c.Env {
			if e.Name == "DATABASE_URL" {
				found = true
			}
			secret := e.Name == "DATABASE_URL" || strings.HasSuffix(e.Name, "WEBHOOK_URL")
			if secret && (e.Value != "" || e.ValueFrom["secretKeyRef"] == nil) {
				t.Errorf("%s: %s must come from a Secret, not a literal", name, e.Name)
			}
		}
		if !found {
			t.Errorf("%s: DATABASE_URL is not set", name)
		}
	}
}
