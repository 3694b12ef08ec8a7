package main

import (
	"reflect"
	"strings"

	"github.com/ingest-dev/ingest/internal/bitrix"
)

// bitrixArgs returns a destination for go-arg that holds the `bitrix` subcommand: the options
// of bitrixCmd and one subcommand per entity of the registry, each with the phases of
// bitrixEntityCmd. go-arg reads commands from struct tags only, so the struct is built at run
// time: a new entity gets its command, its --help line and its place in the list by being
// registered, without a line here.
func bitrixArgs(reg *bitrix.Registry) any {
	static := reflect.TypeFor[bitrixCmd]()
	var fields []reflect.StructField
	for i := range static.NumField() {
		if f := static.Field(i); f.Tag.Get("arg") != "-" {
			fields = append(fields, f)
		}
	}
	for _, ent := range reg.Commands() {
		fields = append(fields, reflect.StructField{
			Name: "Entity_" + strings.ReplaceAll(ent.Name, "-", "_"),
			Type: reflect.TypeFor[*bitrixEntityCmd](),
			Tag:  reflect.StructTag(`arg:"subcommand:` + ent.Name + `" help:"` + strings.ReplaceAll(ent.Help, `"`, `'`) + `"`),
		})
	}
	cmd := reflect.StructOf(fields)
	root := reflect.StructOf([]reflect.StructField{{
		Name: "Bitrix",
		Type: reflect.PointerTo(cmd),
		Tag: reflect.StructTag(`arg:"subcommand:bitrix" help:"migrate a Bitrix24 portal entity by entity: ` +
			strings.Join(reg.CommandNames(), "|") + ` fields-get|fields-set|get|set|verify|run, or status"`),
	}})
	return reflect.New(root).Interface()
}

// bitrixFrom copies the parsed `bitrix` subcommand out of bitrixArgs' destination; nil when the
// command line had none.
func bitrixFrom(dest any) *bitrixCmd {
	v := reflect.ValueOf(dest).Elem().Field(0)
	if v.IsNil() {
		return nil
	}
	v = v.Elem()
	out := &bitrixCmd{}
	o := reflect.ValueOf(out).Elem()
	for i := range o.NumField() {
		name := o.Type().Field(i).Name
		if f := v.FieldByName(name); f.IsValid() {
			o.Field(i).Set(f)
		}
	}
	return out
}
