package bitrixfake

import (
	"maps"
	"strings"
)

// A method of a portal version that does not know a filter key (an operator its documentation
// does not list, say) leaves it out and lists as if it were not there.

// IgnoreFilterKey makes every later listing by the REST method (in a batch or not) leave the
// filter key out (matched regardless of case, operator prefix included: "@ID").
func (p *Portal) IgnoreFilterKey(method, key string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	method = strings.ToLower(method)
	p.ignoredKeys[method] = append(p.ignoredKeys[method], key)
}

// unfiltered returns params without the filter keys the method ignores (IgnoreFilterKey), else
// params. The caller holds p.mu.
func (p *Portal) unfiltered(method string, params map[string]any) map[string]any {
	keys := p.ignoredKeys[method]
	if len(keys) == 0 {
		return params
	}
	name, filter := filterOf(params)
	if filter == nil {
		return params
	}
	kept := maps.Clone(filter)
	for fk := range filter {
		for _, ignored := range keys {
			if strings.EqualFold(fk, ignored) {
				delete(kept, fk)
				p.stats.Faults++
			}
		}
	}
	out := maps.Clone(params)
	out[name] = kept
	return out
}
