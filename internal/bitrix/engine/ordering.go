package engine

import "fmt"

// Ordering is the order in which a child entity's records reach the target within their parent
// (the messages of a conversation). The zero Ordering is any order, with batches sent
// concurrently; an entity declares one with OrderByIDPart, and the engine builds the SQL that
// sorts by it, so entity code writes none.
type Ordering struct {
	idPart int // the 1-based ':'-separated part of the source id holding the number; 0 for none
}

// OrderByIDPart orders a child's records by the number in the n-th (1-based) ':'-separated part
// of their source ids: OrderByIDPart(2) sends "<parent>:<seq>" ids in sequence order.
func OrderByIDPart(n int) Ordering { return Ordering{idPart: n} }

// ordered reports whether the records must go in order.
func (o Ordering) ordered() bool { return o.idPart != 0 }

// valid reports whether the ordering names a part of the source id, or none.
func (o Ordering) valid() bool { return o.idPart >= 0 }

// sql is the expression over bitrix_records that sorts the records; "" for any order. The part
// is a number the engine formats, never text from outside, so it stands in the SQL as a literal.
func (o Ordering) sql() string {
	if !o.ordered() {
		return ""
	}
	return fmt.Sprintf("split_part(source_id, ':', %d)::bigint", o.idPart)
}
