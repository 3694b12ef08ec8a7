package engine

import (
	"context"
	"fmt"
	"strings"
	"testing"
)

// unreadLister is the lister of an entity whose test never reads the portal.
type unreadLister struct{}

func (unreadLister) Get(context.Context, *GetRun) error { return ErrNoTotal }
func (unreadLister) Total(context.Context, Env, *Entity) (int64, error) {
	return 0, ErrNoTotal
}
func (unreadLister) Plan(context.Context, Env, *Entity) ([]EntityPlan, error) {
	return nil, ErrNoTotal
}

// TestEnvEntity: Env.Entity returns the registry's entity, and panics naming an entity the
// registry does not declare, as its doc comment says, instead of handing a hook a nil.
func TestEnvEntity(t *testing.T) {
	things := &Entity{Name: "things", Lister: unreadLister{}, Batch: 10}
	reg, err := NewRegistry(things)
	if err != nil {
		t.Fatal(err)
	}
	env := (&Engine{registry: reg}).env()
	for _, c := range []struct {
		name  string
		want  *Entity
		panic string // what the panic names; empty: no panic
	}{
		{name: "things", want: things},
		{name: "widgets", panic: `entity widgets is not registered`},
	} {
		t.Run(c.name, func(t *testing.T) {
			var got *Entity
			recovered := func() (r any) {
				defer func() { r = recover() }()
				got = env.Entity(c.name)
				return nil
			}()
			switch {
			case c.panic == "" && recovered != nil:
				t.Fatalf("Entity(%q) panicked: %v", c.name, recovered)
			case c.panic == "" && got != c.want:
				t.Fatalf("Entity(%q) = %p, want %p", c.name, got, c.want)
			case c.panic != "" && recovered == nil:
				t.Fatalf("Entity(%q) = %v, want a panic", c.name, got)
			case c.panic != "" && !strings.Contains(fmt.Sprint(recovered), c.panic):
				t.Fatalf("Entity(%q) panicked with %q, want it to say %q", c.name, recovered, c.panic)
			}
		})
	}
}
