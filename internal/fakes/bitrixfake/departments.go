package bitrixfake

import (
	"math/rand/v2"
	"strconv"
	"strings"
)

// kindDepartment seeds the company structure; it is apart from the other kinds so that adding
// departments changes no other generated record.
const kindDepartment uint64 = 15

// departmentState is the company structure (Options.Departments): ids 1..n, 1 the root.
type departmentState struct {
	ids    []int       // ascending
	parent map[int]int // department: the one it belongs to; the root has none
	head   map[int]int // department: its head, one of its members; none for a department without any
}

// initDepartments builds the structure from the seed. The tree is drawn in a shuffled order, a
// department's parent among those drawn before it, so that a parent often has a higher id than
// its child, as on a portal whose structure was reorganised; there is never a cycle. The heads are
// drawn from the users whose UF_DEPARTMENT names the department, so the two agree; a department
// nobody works in has no head (its head left), which a migration must decide about.
func (p *Portal) initDepartments() {
	n := p.opts.Departments
	p.departments = departmentState{ids: generateIDs(n, n+2), parent: map[int]int{}, head: map[int]int{}}
	if n == 0 {
		return
	}
	r := p.rng(kindDepartment, 0)
	order := append([]int{1}, shuffled(r, n)...)
	for i, id := range order[1:] {
		p.departments.parent[id] = order[r.IntN(i+1)]
	}
	members := map[int][]int{}
	for _, u := range p.allUsers {
		d, _ := p.userRow(u).get("UF_DEPARTMENT")
		for _, id := range d.([]int) {
			members[id] = append(members[id], u)
		}
	}
	for _, id := range p.departments.ids {
		if m := members[id]; len(m) > 0 {
			p.departments.head[id] = m[r.IntN(len(m))]
		}
	}
}

// shuffled returns 2..n in a random order.
func shuffled(r *rand.Rand, n int) []int {
	out := make([]int, 0, n-1)
	for id := 2; id <= n; id++ {
		out = append(out, id)
	}
	r.Shuffle(len(out), func(i, j int) { out[i], out[j] = out[j], out[i] })
	return out
}

// department is department.get's row: ID, PARENT and UF_HEAD as strings, SORT a number, as the
// documentation's answer has them; the root has no PARENT, and a department without a head no
// UF_HEAD (the documentation shows no such row: leaving the field out is this fake's assumption,
// which a reader of UF_HEAD must take as "no head", as it would "0" or "").
func (p *Portal) department(id int) object {
	row := object{{"ID", strconv.Itoa(id)}, {"NAME", "Отдел " + strconv.Itoa(id)}, {"SORT", 100 * (1 + id%5)}}
	if parent, ok := p.departments.parent[id]; ok {
		row = append(row, field{"PARENT", strconv.Itoa(parent)})
	}
	if head, ok := p.departments.head[id]; ok {
		row = append(row, field{"UF_HEAD", strconv.Itoa(head)})
	}
	return row
}

// departmentGet is department.get (scope department): top-level sort and order (SORT and
// ORDER are accepted as well, as the official SDK sends them), the filter as FILTER or as
// top-level ID, NAME, SORT, PARENT and UF_HEAD keys, start with 50 rows a page and start=-1.
// A department's members are user.get's users whose UF_DEPARTMENT names it.
func (p *Portal) departmentGet(params map[string]any) answer {
	filter := filterParam(params)
	if filter == nil {
		filter = map[string]any{}
	}
	for k, v := range params {
		switch strings.ToUpper(strings.TrimLeft(k, "!<>=%@")) {
		case "ID", "NAME", "PARENT", "UF_HEAD":
			filter[k] = v
		}
	}
	q := listQuery{filter: parseFilter(filter), order: "ID", start: startParam(params)}
	if s, ok := param(params, "sort"); ok && strval(s) != "" {
		q.order = strings.ToUpper(strval(s))
	}
	if o, ok := param(params, "order"); ok {
		q.desc = strings.EqualFold(strval(o), "DESC")
	}
	res := list(p.departments.ids, p.department, q)
	return answer{result: rowsOrEmpty(res.rows), total: res.total, next: res.next, cost: p.cost(res)}
}
