package graphfake

import "testing"

// An account dropped from the built ones and built again keeps what its once-only faults did:
// a post deleted between two pages stays deleted, a refused cursor is not refused twice.
func TestDroppedAccountKeepsItsFaults(t *testing.T) {
	n := genCacheSize + 500
	s := New(Options{Seed: 9, GeneratedAccounts: n, NoFixtureAccounts: true})
	s.mu.Lock()
	defer s.mu.Unlock()
	del, rej := -1, -1
	for i := range n {
		spec := GeneratedSpec(9, i)
		switch {
		case del < 0 && spec.DeleteBetweenPages && spec.Posts > 1:
			del = i
		case rej < 0 && spec.RejectCursorOnce:
			rej = i
		}
	}
	if del < 0 || rej < 0 {
		t.Fatal("no account with each fault")
	}
	a := s.generated(del)
	a.servedFirstPage = true
	gone := a.media[0].id
	a.media[0].deleted = true
	s.generated(rej).rejectedCursor = true
	for i := range n {
		if i != del && i != rej {
			s.generated(i)
		}
	}
	if s.gen.byIdx[del] != nil || s.gen.byIdx[rej] != nil {
		t.Fatal("the accounts were not dropped")
	}
	if a := s.generated(del); !a.servedFirstPage || a.media[0].id != gone || !a.media[0].deleted || a.media[1].deleted {
		t.Error("the post deleted between pages is back, or its first page counts as unserved")
	}
	if !s.generated(rej).rejectedCursor {
		t.Error("the refused cursor would be refused again")
	}
	if s.mediaByID(gone) == nil {
		t.Error("the deleted post is not known by id (its cursor must be refused as deleted, not unknown)")
	}
}
