package bitrixtest

import (
	"bytes"
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// checkVerify requires the entity's last verify, in both worlds, to report exactly the case's
// problems (none: verified), each problem matched by one expected substring.
func checkVerify(t *testing.T, c Case, ref, crashed *world) {
	t.Helper()
	for _, w := range []struct {
		name string
		*world
	}{{"uninterrupted", ref}, {"killed", crashed}} {
		got := w.rows(t, `SELECT verified::text, coalesce(verify_report->'problems', '[]')::text FROM bitrix_inventory
WHERE entity = $1 AND verify_report IS NOT NULL`, c.Entity)
		if len(got) != 1 {
			t.Errorf("%s run: no verify report of %s", w.name, c.Entity)
			continue
		}
		verified, list, _ := strings.Cut(got[0], " ")
		var problems []string
		if err := json.Unmarshal([]byte(list), &problems); err != nil {
			t.Fatalf("%s problems %s: %v", c.Entity, list, err)
		}
		if want := len(c.Problems) == 0; verified != strconv.FormatBool(want) {
			t.Errorf("%s run: %s verified = %s, want %v; problems: %q", w.name, c.Entity, verified, want, problems)
		}
		left := slices.Clone(problems)
		for _, want := range c.Problems {
			i := slices.IndexFunc(left, func(p string) bool { return strings.Contains(p, want) })
			if i < 0 {
				t.Errorf("%s run: verify of %s did not report %q; it reported %q", w.name, c.Entity, want, problems)
				continue
			}
			left = slices.Delete(left, i, i+1)
		}
		if len(left) > 0 {
			t.Errorf("%s run: verify of %s reported unexpected problems %q", w.name, c.Entity, left)
		}
	}
}

// checkTarget requires the killed runs' target to have created and removed as many records as the
// uninterrupted run's, and, for every member of the family, that the killed run's target holds
// exactly the records its id map names (each source record once, under its idempotency key,
// with the id the map keeps, and nothing else), no record twice under keys that differ only in
// form, and the uninterrupted run's records byte for byte: payloads and checksums, references
// (target ids, stable by key) included. Every member not in Empty must have records.
func checkTarget(t *testing.T, c Case, p plan, ref, crashed *world) {
	t.Helper()
	if n := crashed.target.Stats().Duplicates; n != 0 {
		t.Errorf("%d duplicates on the target", n)
	}
	// However often the killed runs sent a record or its deletion, the target created it once and
	// removed it (with what it owns) once: a resent item is unchanged, a repeated delete not_found.
	// A record created twice was deleted between, and one removed twice was created again.
	if r, k := ref.target.Stats(), crashed.target.Stats(); k.Created != r.Created || k.Deleted+k.Cascaded != r.Deleted+r.Cascaded {
		t.Errorf("the killed runs' target created %d records and removed %d (%d by key); the uninterrupted run's %d and %d (%d by key)",
			k.Created, k.Deleted+k.Cascaded, k.Deleted, r.Created, r.Deleted+r.Cascaded, r.Deleted)
	}
	counts := map[string]int{}
	for _, entity := range p.family {
		want, got := ref.target.Records(entity), crashed.target.Records(entity)
		counts[entity] = len(got)
		if empty := slices.Contains(c.Empty, entity); empty != (len(want) == 0) {
			t.Errorf("the uninterrupted run imported %d %s; the case says empty: %v", len(want), entity, empty)
		}
		mapped := map[string]string{} // key -> target id, from the id map
		for _, row := range crashed.rows(t, `SELECT source_id, target_id FROM bitrix_id_map WHERE entity = $1`, entity) {
			sourceID, targetID, _ := strings.Cut(row, " ")
			mapped["source:"+entity+":"+sourceID] = targetID
		}
		if len(got) != len(mapped) || len(got) != len(want) {
			t.Errorf("%s: the target holds %d records, the id map names %d, the uninterrupted run's target %d",
				entity, len(got), len(mapped), len(want))
		}
		for _, r := range got {
			if id, ok := mapped[r.Key]; !ok || id != r.TargetID {
				t.Errorf("%s: target record %s (id %s) is not in the id map (id %q)", entity, r.Key, r.TargetID, id)
				break
			}
		}
		for i := range min(len(want), len(got)) {
			w, g := want[i], got[i]
			if g.Key != w.Key || g.TargetID != w.TargetID || g.Checksum != w.Checksum || !bytes.Equal(g.Payload, w.Payload) {
				t.Errorf("%s: target record %s (%s) = %s %s, want %s (%s) %s %s", entity, g.Key, g.TargetID, g.Checksum, g.Payload,
					w.Key, w.TargetID, w.Checksum, w.Payload)
				break
			}
		}
	}
	t.Logf("%s: target records by entity: %v", c.Entity, counts)
}

// checkSameState requires the killed run's database to hold the records, statuses, id map and
// inventory of the uninterrupted one, row for row.
func checkSameState(t *testing.T, ref, crashed *world) {
	t.Helper()
	for _, q := range []string{
		`SELECT entity, source_id, status, checksum, payload::text, dates::text, coalesce(last_error, '') FROM bitrix_records ORDER BY entity, source_id`,
		`SELECT entity, source_id, target_id, checksum FROM bitrix_id_map ORDER BY entity, source_id`,
		`SELECT entity, source_total::text, get_complete::text, verified::text FROM bitrix_inventory ORDER BY entity`,
	} {
		want, got := ref.rows(t, q), crashed.rows(t, q)
		if len(want) == 0 || len(got) != len(want) {
			t.Errorf("%s: %d rows, want %d", q, len(got), len(want))
			continue
		}
		for i := range want {
			if got[i] != want[i] {
				t.Errorf("%s: row %d = %s, want %s", q, i, got[i], want[i])
				break
			}
		}
	}
}
