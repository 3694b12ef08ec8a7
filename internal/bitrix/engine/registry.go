package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
)

// Entity describes one Bitrix24 entity to the engine: what it is called, what must be migrated
// before it, how get reads it, how its records refer to other entities and how set and verify
// treat it. The phases (FieldsGet, FieldsSet, Get, Set, Verify) are generic code that loops
// over the entities of a Registry; an entity is a value, not code. Hooks exist only for what
// cannot be described (a payload with BB-code to translate, checks only one entity has).
// docs/adding-an-entity.md walks through adding one.
type Entity struct {
	// Name is how commands, bitrix_records.entity, idempotency keys and metric labels name it.
	Name string
	// Help is the one-line description `ingest bitrix --help` shows.
	Help string
	// Noun is what people call the records in reports ("memberships"); empty means Name.
	Noun string
	// Requires lists the entities that must be imported and VERIFIED before this one's set
	// (the entity its records' owners are records of).
	Requires []string
	// Lister reads a top-level entity from the portal (an ID-chained scan, a lister of its own). A
	// child may have one too: it is then read by a listing of its own right after its parent's,
	// in the parent's get (see ParentKey).
	Lister Lister
	// Fetch reads a child entity with every page of its parent (the members of each parent),
	// when the parent's lister does not read it itself.
	Fetch *ChildFetch
	// Walk reads a child entity once its parent's listing is complete, by walking one cursor-paged
	// listing per key (what each author wrote, what was addressed to each audience, the history
	// of each conversation), each key's place kept in the page log so an interrupted get resumes
	// it (lister_walk.go). A child may have both Fetch and Walk (some of its records read with
	// each page of parents, others walked afterwards).
	Walk Walker
	// Parent, for a child entity, names the entity it belongs to (memberships belong to what
	// they are memberships of): children are read with their parent, imported only once
	// their parent is IMPORT_OK, and verified with it. A child has no command of its own.
	Parent string
	// ParentField is the payload field that receives the parent's target id on import
	// ("PARENT_ID"); empty when the payload hook writes it.
	ParentField string
	// Refs are the record's references to other entities, translated through the id map on
	// import: a reference without a target id fails the record with that reason.
	Refs []Ref
	// SelfRef, for an entity whose records refer to records of the same entity (a record's
	// parent record, a department's PARENT), names the payload field holding that
	// reference; it must also be an Optional Ref to the entity itself. get keeps the referenced
	// id in parent_source_id, and set imports parents first: a record goes only once the record
	// it names is IMPORT_OK (or it names none), so its reference is never lost. A record whose
	// parent was never read, failed for good, or waits for it in a cycle fails with that reason
	// once nothing else can be imported.
	SelfRef string
	// Dates are the fields holding dates: each is kept as received, in UTC and with its offset.
	Dates []string
	// Shapes declares the canonical form of the payload fields the engine cannot tell by itself
	// (canonical.go): which always appear, which hold a yes/no, an id, an amount or a bare date,
	// and which are sent exactly as the portal wrote them.
	Shapes Shapes
	// Volatile fields change without the record changing (presence, last activity): stored but
	// left out of the checksum, so a new get does not send every active record again.
	Volatile []string
	// Batch is how many records one import.<entity>.batch call carries.
	Batch int
	// Order, for a child entity whose records must reach the target in order within their
	// parent (the messages of a conversation), is that order (OrderByIDPart): set then sends them
	// parent by parent, one batch after another. The zero Ordering means any order, with batches
	// sent concurrently.
	Order Ordering
	// Fields is how the entity's custom fields are read; nil when the REST API has none, and
	// NoFields says why.
	Fields   *CustomFields
	NoFields string
	// Payload, when set, builds what the target receives for a record; nil means the record as
	// the portal sent it, with dates in their original offset, Refs and ParentField translated.
	Payload func(r Record, refs *Refs) (json.RawMessage, error)
	// Verify, when set, adds checks of the entity's own to verify (after counts, children and
	// references, before the field-by-field comparison).
	Verify func(ctx context.Context, env Env, ent *Entity, r *VerifyReport) error
	// Advice, when set, adds lines of the entity's own to `bitrix status`: what a person can do
	// about its records not migrated (whom to ask for a webhook).
	Advice func(ctx context.Context, env Env, ent *Entity) ([]string, error)

	// IDField is the row field holding the record's portal id when it is not "ID"
	// ("id" for some methods); empty means "ID".
	IDField string
	// ParentKey, for a child entity with a Lister of its own (read by a listing of its own right
	// after its parent's, in the parent's get: running instances after their templates), is the
	// row field that names the parent's portal id.
	ParentKey string
	// Finish, when set, adjusts the payload set builds for a record after the engine translated
	// its dates, enumerations, references and custom-field names (money as decimal strings,
	// a reference whose entity depends on another field). Not used with Payload.
	Finish func(fields map[string]json.RawMessage, r Record, rf *Refs) error
	// Flags are the options of the entity's own commands (Flag): what a run of the entity may be
	// asked to do differently, declared here so that the command line names no entity.
	Flags []Flag
	// IDFormat, when the portal's id of a record is not one plain number, is how people write it
	// (`show bitrix`, `status set --entity`): "GROUP:USER", "STATUS_ID". Empty means the id.
	IDFormat string
	// Untranslated, when set, names the values of an imported record that set sent as the portal
	// has them because their mapping cannot be proved (a user named in a template's text, a
	// document outside the CRM), given the record's fields and what it refers to: verify lists
	// each by record.
	Untranslated func(fields map[string]json.RawMessage, rf *Refs) []string
	// ChildCount, for a child entity, is the portal's count of its records per parent (the
	// messages of each conversation), which verify compares with what get read (PortalCount).
	ChildCount *PortalCount
	// OutOfReach is the payload field of the entity's own, when it has one, whose presence marks
	// a record the webhook's user cannot read (as the engine's UnreachableKey does): verify
	// asks no count of its children and leaves it out of the coverage of listed references.
	OutOfReach string
	// CountRead, for an entity no method of the portal counts (its Lister's Total answers
	// ErrNoTotal), has verify count what get read instead (verifyCountsRead): the records in
	// reach are the source's count, the target is compared with them less the excused ones, and
	// those not imported are listed. Without it such an entity's own Verify counts it.
	CountRead bool
	// NotMigrated names what the entity's migration leaves behind by design (what the target has
	// no place for, a running state), so that verify's report and the README say so: nothing is
	// silently absent.
	NotMigrated []string
}

// Ref is one reference of a record to a record of another entity.
type Ref struct {
	// Field is the payload field holding the portal's id ("OWNER_ID").
	Field string
	// Name is what people call the reference in reports ("owner"); empty means Field.
	Name string
	// Entity is the entity it refers to.
	Entity string
	// Values reads the referenced ids when they are not one plain field (a list of ids in an
	// object, mentions in a text); nil means the field's value as one id. A Values ref is
	// only loaded for the payload hook, which translates it.
	Values func(fields map[string]json.RawMessage) []string
	// Many: the field holds a list of ids (many to many), each translated;
	// the list keeps its order (links.go).
	Many bool
	// Optional: an empty value (absent, null, "", "0", 0, []) is no reference and is sent as it
	// is, instead of failing the record.
	Optional bool
	// DropGone: a reference to a record the portal will not show (never read by a complete get
	// of Entity: a deleted record, a parent hidden from the webhook's user) is
	// dropped, sent as null or left out of the list, instead of failing the record; verify lists
	// every dropped link by record. On a SelfRef it also lets the record go without waiting for
	// that parent (dropped.go).
	DropGone bool
	// Listed: the field holds a list of ids (read by Values for translation) whose coverage
	// verify checks: how many of them have a target id, and which records hold ones that do not.
	Listed bool
}

// None reports whether an id is no reference at all: the portal writes "0", "" or null.
func None(id string) bool { return id == "" || id == "0" }

func (r Ref) name() string {
	if r.Name != "" {
		return r.Name
	}
	return r.Field
}

func (e *Entity) noun() string {
	if e.Noun != "" {
		return e.Noun
	}
	return e.Name
}

// ids returns the source ids a record's payload refers to through the ref.
func (r Ref) ids(fields map[string]json.RawMessage) []string {
	if r.Values != nil {
		return r.Values(fields)
	}
	if r.Many || r.Optional {
		return linkIDs(fields[r.Field])
	}
	if id := Text(fields, r.Field); !None(id) {
		return []string{id}
	}
	return nil
}

// CustomFields says how an entity's custom fields are listed on the portal.
type CustomFields struct {
	// Method lists them (user.userfield.list); Params are its parameters.
	Method string
	Params map[string]any
	// RowsPath leads from the result to the list of fields (userfieldconfig.list: ["fields"]).
	RowsPath []string
	// Paged: the method pages by start, 50 fields to a page (userfieldconfig.list), and every
	// page is read.
	Paged bool
	// Normalize rewrites a row into user.userfield.list's shape (FIELD_NAME, USER_TYPE_ID,
	// MULTIPLE, SETTINGS, labels, LIST of {ID, VALUE, XML_ID, DEF, SORT}) for a method that
	// answers in another (userfieldconfig.list's camelCase), and says whether the row is one of
	// the entity's fields at all; nil keeps rows as they are.
	Normalize func(row json.RawMessage) (json.RawMessage, bool, error)
	// Naming is how the target names the fields (fields_names.go); nil keeps the portal's names.
	Naming *FieldNaming
	// Links, when set, says the values of the entity's custom fields of type employee and crm
	// are references, translated through the id map (fields_links.go); nil sends them as they are.
	Links *FieldLinks
	// System names fields the method always lists that every portal has (UF_MAIL_MESSAGE and
	// the like): fields-set never creates them, their values are
	// sent as they are.
	System []string
	// Creatable, when set, lists the only field types the target can create for the entity
	// (string, double, datetime, boolean for some); fields of other types are not created, and
	// their values are left out of what set sends, both named in fields-set's log and verify.
	Creatable []string
}

// system reports whether a field is one of the entity's system fields.
func (c *CustomFields) system(name string) bool {
	return slices.ContainsFunc(c.System, func(s string) bool { return strings.EqualFold(s, name) })
}

// CanCreate reports whether the target can create a field of the type: fields-set creates only
// those, and warns about the others, whose values are not migrated.
func (c *CustomFields) CanCreate(typ string) bool {
	return len(c.Creatable) == 0 || slices.Contains(c.Creatable, typ)
}

// Registry holds the entities of one migration, in the order they migrate.
type Registry struct {
	byName map[string]*Entity
	order  []*Entity
}

// NewRegistry checks the entities and orders them so that each comes after what it requires
// and after its parent: unique names, known requirements and parents, no cycles, a lister for
// every top-level entity and a batch size for every one.
func NewRegistry(entities ...*Entity) (*Registry, error) {
	r := &Registry{byName: map[string]*Entity{}}
	for _, e := range entities {
		switch {
		case e.Name == "" || strings.ContainsAny(e.Name, " :"):
			return nil, fmt.Errorf("bitrix entity %q: want a name without spaces or colons", e.Name)
		case r.byName[e.Name] != nil:
			return nil, fmt.Errorf("bitrix entity %q registered twice", e.Name)
		case e.Batch <= 0:
			return nil, fmt.Errorf("bitrix entity %q: batch size must be positive", e.Name)
		case e.Parent == "" && e.Lister == nil:
			return nil, fmt.Errorf("bitrix entity %q: a top-level entity needs a lister", e.Name)
		case e.SelfRef != "" && !slices.ContainsFunc(e.Refs, func(r Ref) bool {
			return r.Field == e.SelfRef && r.Entity == e.Name && r.Optional && r.Values == nil
		}):
			return nil, fmt.Errorf("bitrix entity %q: SelfRef %s must also be an Optional plain Ref to %q", e.Name, e.SelfRef, e.Name)
		case e.SelfRef != "" && e.Parent != "":
			return nil, fmt.Errorf("bitrix entity %q: a child cannot have a SelfRef (parent_source_id holds its parent)", e.Name)
		case e.Walk != nil && e.Parent == "":
			return nil, fmt.Errorf("bitrix entity %q: only a child is walked", e.Name)
		case !e.Order.valid():
			return nil, fmt.Errorf("bitrix entity %q: Order names no part of the source id", e.Name)
		case e.ChildCount != nil && (e.Parent == "" || e.ChildCount.Count == nil || e.Lister != nil):
			return nil, fmt.Errorf("bitrix entity %q: a ChildCount, with its Count, is for a child without a lister of its own", e.Name)
		case e.Order.ordered() && e.Parent == "":
			return nil, fmt.Errorf("bitrix entity %q: only a child's records are sent in order within their parent", e.Name)
		}
		if err := checkFlags(e); err != nil {
			return nil, err
		}
		r.byName[e.Name] = e
	}
	for _, e := range entities {
		deps := slices.Clone(e.Requires)
		if e.Parent != "" {
			deps = append(deps, e.Parent)
		}
		for _, ref := range e.Refs {
			deps = append(deps, ref.Entity)
		}
		for _, d := range deps {
			if r.byName[d] == nil {
				return nil, fmt.Errorf("bitrix entity %q refers to unknown entity %q", e.Name, d)
			}
		}
	}
	// Depth-first topological order, stable in registration order.
	state := map[string]int{} // 1 visiting, 2 done
	var visit func(e *Entity, path []string) error
	visit = func(e *Entity, path []string) error {
		switch state[e.Name] {
		case 1:
			return fmt.Errorf("bitrix entities depend on each other in a cycle: %s", strings.Join(append(path, e.Name), " -> "))
		case 2:
			return nil
		}
		state[e.Name] = 1
		deps := slices.Clone(e.Requires)
		if e.Parent != "" {
			deps = append(deps, e.Parent)
		}
		for _, d := range deps {
			if err := visit(r.byName[d], append(path, e.Name)); err != nil {
				return err
			}
		}
		state[e.Name] = 2
		r.order = append(r.order, e)
		return nil
	}
	for _, e := range entities {
		if err := visit(e, nil); err != nil {
			return nil, err
		}
	}
	return r, nil
}

// All returns every entity, children included, in migration order.
func (r *Registry) All() []*Entity { return slices.Clone(r.order) }

// Commands returns the entities that have commands of their own (every one but the children),
// in migration order.
func (r *Registry) Commands() []*Entity {
	var out []*Entity
	for _, e := range r.order {
		if e.Parent == "" {
			out = append(out, e)
		}
	}
	return out
}

// Children returns the entities whose parent is e, in migration order.
func (r *Registry) Children(e *Entity) []*Entity {
	var out []*Entity
	for _, c := range r.order {
		if c.Parent == e.Name {
			out = append(out, c)
		}
	}
	return out
}

// Family returns e followed by its children: what one command of e reads, imports and verifies.
func (r *Registry) Family(e *Entity) []*Entity { return append([]*Entity{e}, r.Children(e)...) }

// Entity returns the entity of that name, children included.
func (r *Registry) Entity(name string) (*Entity, bool) {
	e, ok := r.byName[name]
	return e, ok
}

// Command returns the entity a command names, or an error saying what the valid names are (or,
// for a child, which command migrates it).
func (r *Registry) Command(name string) (*Entity, error) {
	e, ok := r.byName[name]
	switch {
	case !ok:
		return nil, fmt.Errorf("unknown bitrix entity %q (valid: %s)", name, strings.Join(r.CommandNames(), ", "))
	case e.Parent != "":
		return nil, fmt.Errorf("bitrix entity %q is migrated as part of %q: run `ingest bitrix %s ...`", name, e.Parent, e.Parent)
	}
	return e, nil
}

// CommandNames lists the names Command accepts, in migration order.
func (r *Registry) CommandNames() []string {
	var out []string
	for _, e := range r.Commands() {
		out = append(out, e.Name)
	}
	return out
}

// Names lists every entity's name, children included, in migration order.
func (r *Registry) Names() []string {
	out := make([]string, len(r.order))
	for i, e := range r.order {
		out[i] = e.Name
	}
	return out
}
