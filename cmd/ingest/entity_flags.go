package main

import (
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"github.com/ingest-dev/ingest/internal/bitrix/engine"
)

// entityFlags are the flags an entity declares (engine.Flag) that one of its phase commands
// takes. Their go-arg destination is a struct built from the declarations, one field a flag, so
// the command line learns them from the registry and names no entity.
type entityFlags struct {
	entity string
	flags  []engine.Flag
	dest   reflect.Value // a pointer to the struct go-arg fills
}

// newEntityFlags returns the flags of ent that the command of phase takes (run takes every one),
// nil when it takes none.
func newEntityFlags(ent *engine.Entity, phase string) *entityFlags {
	f := &entityFlags{entity: ent.Name}
	var fields []reflect.StructField
	for _, fl := range ent.Flags {
		if phase != "run" && !slices.Contains(fl.Phases, engine.Phase(phase)) {
			continue
		}
		spec := "--" + fl.Name
		if fl.Env != "" {
			spec += ",env:" + fl.Env
		}
		tag := fmt.Sprintf("arg:%s help:%s", strconv.Quote(spec), strconv.Quote(fl.Help))
		typ := reflect.TypeFor[bool]()
		if fl.Placeholder != "" {
			tag += " placeholder:" + strconv.Quote(fl.Placeholder)
			typ = reflect.TypeFor[string]()
		}
		fields = append(fields, reflect.StructField{Name: fmt.Sprintf("F%d", len(fields)), Type: typ, Tag: reflect.StructTag(tag)})
		f.flags = append(f.flags, fl)
	}
	if len(f.flags) == 0 {
		return nil
	}
	f.dest = reflect.New(reflect.StructOf(fields))
	return f
}

// options is the go-arg destination of the flags.
func (f *entityFlags) options() any { return f.dest.Interface() }

// apply sets the flags given on the command line or in the environment on the entity of reg.
func (f *entityFlags) apply(reg *engine.Registry) error {
	ent, ok := reg.Entity(f.entity)
	if !ok {
		return fmt.Errorf("no entity %q in the registry", f.entity)
	}
	for i, fl := range f.flags {
		v := f.dest.Elem().Field(i)
		value := "true"
		if v.Kind() == reflect.String {
			value = v.String()
		}
		if value == "" || (v.Kind() == reflect.Bool && !v.Bool()) {
			continue
		}
		if err := fl.Set(ent, value); err != nil {
			return usageError{fmt.Sprintf("bitrix %s --%s: %v", f.entity, fl.Name, err)}
		}
	}
	return nil
}

// withHelp returns dest, a pointer to a struct of exported fields, seen through a struct type
// whose fields named in help have that help line instead: go-arg reads help from struct tags
// only, and some help lines come from the registry (the id formats `show bitrix` takes). The
// type has the same fields in the same order, hence the same layout: go-arg's writes land in
// dest.
func withHelp(dest any, help map[string]string) any {
	v := reflect.ValueOf(dest).Elem()
	t := v.Type()
	fields := make([]reflect.StructField, t.NumField())
	for i := range fields {
		fields[i] = t.Field(i)
		if h, ok := help[fields[i].Name]; ok {
			fields[i].Tag = retag(fields[i].Tag, h)
		}
	}
	nt := reflect.StructOf(fields)
	for i := range fields {
		if nt.Field(i).Offset != t.Field(i).Offset || nt.Size() != t.Size() {
			panic(fmt.Sprintf("withHelp: %s does not keep its layout", t))
		}
	}
	return reflect.NewAt(nt, v.Addr().UnsafePointer()).Interface()
}

// retag is tag with its help replaced by help: go-arg's keys, in their order.
func retag(tag reflect.StructTag, help string) reflect.StructTag {
	var parts []string
	for _, key := range []string{"arg", "default", "help", "placeholder"} {
		v, ok := tag.Lookup(key)
		if key == "help" {
			v, ok = help, true
		}
		if ok {
			parts = append(parts, key+":"+strconv.Quote(v))
		}
	}
	return reflect.StructTag(strings.Join(parts, " "))
}
