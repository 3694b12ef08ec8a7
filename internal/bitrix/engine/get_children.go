package engine

import (
	"context"
	"errors"
	"fmt"
)

// getListedChildren reads, after their parent, the children of ent that have a listing of their
// own (a child listed by a method of its own, after its parents). Each keeps its own inventory
// and page log, so an interrupted get resumes each where it stopped; their counts join the get's.
func (e *Engine) getListedChildren(ctx context.Context, ent *Entity, st *GetStats) error {
	for _, child := range e.registry.Children(ent) {
		if child.Lister == nil {
			continue
		}
		cst := GetStats{Counts: st.Counts}
		err := child.Lister.Get(ctx, &GetRun{Env: e.env(), Ent: child, Stats: &cst, Start: e.now()})
		if errors.Is(err, ErrLimitReached) {
			err = nil
		}
		if err != nil {
			return fmt.Errorf("%s: %w", child.Name, err)
		}
		st.Pages += cst.Pages
		st.Complete = st.Complete && cst.Complete
	}
	return nil
}
