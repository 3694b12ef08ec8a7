package main

import (
	"reflect"
	"regexp"
)

// blank returns a new zero value of the struct dest points to. Help is written from blank
// options: go-arg shows a non-zero field as the option's default, and after parsing the fields
// hold what the environment and the command line gave, secrets included (DATABASE_URL with its
// password, the webhook tokens, SOCIAL_TOKEN_KEY). A blank copy shows only the defaults of the
// struct tags.
func blank(dest any) any {
	return reflect.New(reflect.TypeOf(dest).Elem()).Interface()
}

// envNote is go-arg's note of an option's variable, the last item in the brackets of a help line.
var envNote = regexp.MustCompile(`env: ([A-Za-z_][A-Za-z0-9_]*)\]`)

// markSetEnv adds ", set" to the note of every variable that is set in the environment
// (`[env: DATABASE_URL, set]`): help says which settings the environment gives, never what
// they hold.
func markSetEnv(help string, lookup func(string) (string, bool)) string {
	return envNote.ReplaceAllStringFunc(help, func(m string) string {
		name := envNote.FindStringSubmatch(m)[1]
		v, ok := lookup(name)
		switch {
		case !ok:
			return m
		case v == "":
			return "env: " + name + ", set but empty]"
		}
		return "env: " + name + ", set]"
	})
}
