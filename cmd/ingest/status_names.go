package main

import (
	"fmt"
	"slices"
	"strconv"

	"github.com/ingest-dev/ingest/internal/status"
)

// recordNames names records in the answers of status set and status ack as the person named
// them: by the source's id after --entity ("bitrix tasks 67"), by the row id otherwise
// ("bitrix 1613"). ids are resolveIDs' answer for keys, in their order, unknown ones left out.
func recordNames(m *status.Machine, entity string, keys, unknown []string, ids []int64) func(int64) string {
	byID := map[int64]string{}
	if entity != "" {
		i := 0
		for _, key := range keys {
			if slices.Contains(unknown, key) || i >= len(ids) {
				continue
			}
			byID[ids[i]] = key
			i++
		}
	}
	return func(id int64) string {
		if key, ok := byID[id]; ok {
			return fmt.Sprintf("%s %s %s", m.Name, entity, key)
		}
		return m.Name + " " + strconv.FormatInt(id, 10)
	}
}
