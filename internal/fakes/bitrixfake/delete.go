package bitrixfake

import (
	"fmt"
	"slices"
)

// Deletions, as a person deletes records on the portal (Portal.Delete) or through the REST delete
// methods (delete_methods.go). Afterwards the portal behaves as the real one does:
//
//   - lists leave the record out and their totals drop;
//   - get by id answers the method's documented error (crm.item.get NOT_FOUND, tasks.task.get
//     the access error it gives for any task the user cannot read), crm.timeline.comment.list
//     for the record's comments answers "Not found";
//   - its children vanish: a deal's product rows and timeline comments, a contact's or company's
//     comments, a task's checklist, comments and chat, a post's comments; a deleted comment leaves
//     its task's comment list or chat, or its author's list of feed comments;
//   - a deleted task's subtasks move up to its parent (or to none), as the server's CTasks::Delete
//     does (UPDATE b_tasks SET PARENT_ID = <the deleted task's parent> WHERE PARENT_ID = <id>);
//   - other records that name a deleted CRM record keep naming it (a deal its company, a contact
//     its companies, a smart item its deal), as they do while it is in the recycle bin; the
//     migration drops such links.
//
// Smart process items are not deleted by this fake.

// The entities Delete knows, named as the migration names them.
const (
	DeleteCompanies    = "companies"
	DeleteContacts     = "contacts"
	DeleteDeals        = "deals"
	DeleteTasks        = "tasks"
	DeleteFeed         = "feed"          // a post, by its id
	DeleteFeedComments = "feed_comments" // a post's comment, by its blog comment id
	DeleteTaskComments = "task_comments" // a task's comment: an old-card comment id or a task chat message id
)

// Delete deletes a record of the portal as a person with the right to would; it fails if the
// portal holds no such record.
func (p *Portal) Delete(entity string, id int) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	ok := false
	switch entity {
	case DeleteCompanies:
		ok = removeID(&p.companies, id)
	case DeleteContacts:
		ok = removeID(&p.contacts, id)
	case DeleteDeals:
		ok = removeID(&p.deals, id)
	case DeleteTasks:
		ok = p.deleteTask(id)
	case DeleteFeed:
		ok = p.deletePost(id)
	case DeleteFeedComments:
		ok = p.deletePostComment(id)
	case DeleteTaskComments:
		ok = p.deleteTaskComment(id)
	default:
		return fmt.Errorf("bitrixfake: cannot delete %s", entity)
	}
	if !ok {
		return fmt.Errorf("bitrixfake: no %s %d to delete", entity, id)
	}
	return nil
}

// removeID removes id from an ascending list, reporting whether it was there.
func removeID(ids *[]int, id int) bool {
	i := indexOf(*ids, id)
	if i < 0 {
		return false
	}
	*ids = slices.Delete(slices.Clone(*ids), i, i+1)
	return true
}

// crmDeleted reports whether a CRM record was generated and has been deleted since.
func (p *Portal) crmDeleted(entityTypeID, id int) bool {
	gen := map[int][]int{etCompany: p.genCompanies, etContact: p.genContacts, etDeal: p.genDeals}[entityTypeID]
	return indexOf(gen, id) >= 0 && indexOf(p.crmIDs(entityTypeID), id) < 0
}

// deleteTask removes a task, hidden or not, with its checklist, comments and chat; its subtasks
// take its parent.
func (p *Portal) deleteTask(id int) bool {
	t, ok := p.tasks.byID[id]
	if !ok {
		return false
	}
	delete(p.tasks.byID, id)
	removeID(&p.tasks.ids, id)
	removeID(&p.tasks.visible, id)
	for _, other := range p.tasks.byID {
		if other.parent == id {
			other.parent = t.parent
		}
	}
	return true
}

// deleteTaskComment removes one comment of a task: an old-card comment (id task*64+k) or a message
// of a new-card task's chat (taskMessageBase + task*64 + k), whichever the task has.
func (p *Portal) deleteTaskComment(id int) bool {
	chat := id >= taskMessageBase
	if chat {
		id -= taskMessageBase
	}
	t, ok := p.tasks.byID[id/64]
	k := id % 64
	if !ok || t.chat != chat || k >= t.comments || t.gone[k] {
		return false
	}
	if t.gone == nil {
		t.gone = map[int]bool{}
	}
	t.gone[k] = true
	return true
}

// deletePost removes a post with its comments.
func (p *Portal) deletePost(id int) bool {
	if _, ok := p.feed.byID[id]; !ok {
		return false
	}
	delete(p.feed.byID, id)
	removeID(&p.feed.ids, id)
	p.feed.reindex()
	return true
}

// deletePostComment removes one comment, named by its blog comment id.
func (p *Portal) deletePostComment(blogID int) bool {
	ps, ok := p.feed.byID[(blogID-postBlogCommentBase)/32]
	if !ok {
		return false
	}
	k := slices.IndexFunc(ps.comments, func(c postComment) bool { return c.blogID == blogID })
	if k < 0 {
		return false
	}
	// A new slice: byAuthor points into the old one, and reindex rebuilds it from this.
	ps.comments = slices.Delete(slices.Clone(ps.comments), k, k+1)
	p.feed.reindex()
	return true
}

// reindex rebuilds the comments by author from the posts, in ascending comment id (posts
// ascending, their comments in order), as initFeed builds it.
func (s *feedState) reindex() {
	s.byAuthor = map[int][]*postComment{}
	for _, id := range s.ids {
		ps := s.byID[id]
		for i := range ps.comments {
			c := &ps.comments[i]
			s.byAuthor[c.author] = append(s.byAuthor[c.author], c)
		}
	}
}
