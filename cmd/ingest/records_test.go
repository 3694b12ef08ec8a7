package main

import (
	"context"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/ingest-dev/ingest/internal/bitrix"
	"github.com/ingest-dev/ingest/internal/dbtest"
	"github.com/ingest-dev/ingest/internal/run"
)

// TestEveryCommandPublishesWhatItOwns runs every recorded command's run on an empty database
// and reads its metrics textfile: each publishes ingest_records (the stuck-records alerts read
// them) under its pipeline's source, and a Bitrix24 command only for its entity and the
// entity's children, so the counts of a command that stopped running (a suspended CronJob) are
// kept alive by no other command.
func TestEveryCommandPublishesWhatItOwns(t *testing.T) {
	t.Parallel()
	pool := dbtest.Pool(t)
	ctx := context.Background()
	reg := bitrix.Catalog()
	series := regexp.MustCompile(`(?m)^ingest_records\{command="[^"]*",scope="([^"]*)",source="([^"]*)",status="[^"]*"\} `)
	dir := t.TempDir()
	n := 0
	for _, p := range pipelines() {
		walkTree(&cliCommand{subs: p.commands}, nil, func(words []string, c *cliCommand) {
			if c.act == nil || !c.act.recorded {
				return
			}
			command := strings.Join(words, " ")
			n++
			var owned []run.Owned
			if c.act.records != nil {
				owned = c.act.records()
			}
			if len(owned) == 0 {
				t.Errorf("%s: owns no state machine", command)
				return
			}
			path := filepath.Join(dir, strings.ReplaceAll(command, " ", "_")+".prom")
			o := run.Options{Pool: pool, Command: command, Log: slog.New(slog.NewTextHandler(io.Discard, nil)),
				MetricsTextfile: path, Records: owned}
			if err := run.Exec(ctx, o, func(context.Context, *run.Run) error { return nil }); err != nil {
				t.Fatalf("%s: %v", command, err)
			}
			raw, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			found := series.FindAllStringSubmatch(string(raw), -1)
			if len(found) == 0 {
				t.Errorf("%s publishes no ingest_records:\n%s", command, raw)
			}
			var family []string
			if len(words) == 3 && words[0] == "bitrix" {
				e, _ := reg.Entity(words[1])
				for _, f := range reg.Family(e) {
					family = append(family, f.Name)
				}
			}
			for _, f := range found {
				scope, source := f[1], f[2]
				if source != p.name {
					t.Errorf("%s: ingest_records{source=%q}, want %q (what `ingest status` takes)", command, source, p.name)
				}
				if family != nil && !slices.Contains(family, scope) {
					t.Errorf("%s publishes the records of %q, which it does not own (owns %v)", command, scope, family)
				}
			}
		})
	}
	if n < 20 {
		t.Fatalf("only %d commands registered: the loop is not over the registry", n)
	}
}
