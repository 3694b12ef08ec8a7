package engine

// Not every entity can be read by modification time: a lister whose method has no usable
// modification filter (or whose children change without their parent showing it) runs every
// pass full, and says why, for the log, `bitrix status` and `bitrix plan`
// (docs/bitrix-delta.md, "What a delta pass reads, per entity").

// FullPassLister is a Lister that may be unable to read its entity by modification time:
// NoDelta says why every pass of it is full, or nothing when it may run a delta pass.
type FullPassLister interface {
	Lister
	NoDelta() string
}

// NoDeltaOf is why a lister runs every pass full: its own words when it says (FullPassLister),
// a general reason otherwise; "" when it may run a delta pass.
func NoDeltaOf(l Lister) string {
	if f, ok := l.(FullPassLister); ok {
		return f.NoDelta()
	}
	return "the entity's lister reads every record each pass (no modification filter)"
}

// NoDelta makes IDScan a FullPassLister: a scan with Modified fields may run delta passes; one
// without says why (Unfiltered), or that the method has none.
func (s *IDScan) NoDelta() string {
	switch {
	case len(s.Modified) > 0:
		return ""
	case s.Unfiltered != "":
		return s.Unfiltered
	}
	return s.Scan.Method + " has no modification filter"
}

// NoDelta makes OffsetPages a FullPassLister: an offset listing is always read whole, since a
// filter would shift its pages; Unfiltered says why the method cannot do better.
func (o *OffsetPages) NoDelta() string {
	if o.Unfiltered != "" {
		return o.Unfiltered
	}
	return o.List.Method + " is read by offset, every page each pass"
}
