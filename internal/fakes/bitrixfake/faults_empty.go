package bitrixfake

import (
	"maps"
	"math"
	"strings"
)

// A portal under load or replica lag sometimes answers a page of a listing empty though rows
// follow it: result [] (items [], tasks []), no next, as it answers past the last row. A client
// walking by ID takes that for the end of its walk.

// EmptyPageAfter makes the next listing by the REST method (in a batch or not) whose filter asks
// for the IDs after id (">ID": id, any case) answer an empty page, once: the method's own answer
// for a filter no row passes.
func (p *Portal) EmptyPageAfter(method string, id int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	method = strings.ToLower(method)
	p.emptyPages[method] = append(p.emptyPages[method], id)
}

// emptied returns params with the ID bound of their filter moved past every row when an empty
// page is due for this listing (EmptyPageAfter), else params. The caller holds p.mu.
func (p *Portal) emptied(method string, params map[string]any) map[string]any {
	due := p.emptyPages[method]
	if len(due) == 0 {
		return params
	}
	name, filter := filterOf(params)
	for key, v := range filter {
		if !strings.EqualFold(key, ">ID") {
			continue
		}
		for i, after := range due {
			if intval(v) != after {
				continue
			}
			p.emptyPages[method] = append(due[:i:i], due[i+1:]...)
			p.stats.Faults++
			narrowed := maps.Clone(filter)
			narrowed[key] = math.MaxInt32
			out := maps.Clone(params)
			out[name] = narrowed
			return out
		}
	}
	return params
}

// filterOf returns the listing's filter parameter and its name as the client spelled it
// ("filter", "FILTER"), or nil when it has none.
func filterOf(params map[string]any) (name string, filter map[string]any) {
	for k, v := range params {
		if m, ok := v.(map[string]any); ok && strings.EqualFold(k, "filter") {
			return k, m
		}
	}
	return "", nil
}
