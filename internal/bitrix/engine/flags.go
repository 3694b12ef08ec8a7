package engine

import (
	"fmt"
	"regexp"
	"slices"
)

// Flag is a command-line option of an entity's own: `ingest bitrix ENTITY PHASE --NAME`, also
// read from Env. The command line offers it on the commands of the phases it names (and on run,
// which runs them) and, before such a command runs, calls Set on the entity of the registry the
// engine is given: what the option means stays with the entity that declares it.
type Flag struct {
	// Name is the option's name without its dashes ("chat-rescan").
	Name string
	// Env is the environment variable that sets it too ("BITRIX_CHAT_RESCAN"); empty for none.
	Env string
	// Help is its --help line.
	Help string
	// Placeholder, for an option that takes a value, names the value in --help ("N"); empty
	// makes the option a switch, given or not.
	Placeholder string
	// Phases are the phases whose commands take it ("get"); run takes it too.
	Phases []Phase
	// Set applies the option to the entity when it is given: a switch's value is "true". Its
	// error is a usage error, reported before anything connects.
	Set func(e *Entity, value string) error
}

// flagName is what a flag's name and variable may be: go-arg takes them as they are, and a
// command line is no place for surprises.
var (
	flagName = regexp.MustCompile(`^[a-z][a-z0-9]*(-[a-z0-9]+)*$`)
	flagEnv  = regexp.MustCompile(`^[A-Z][A-Z0-9_]*$`)
)

// checkFlags refuses an entity's flags the command line could not offer: a child's (a child has
// no command), an unnamed or twice-named one, one without help, a Set or a phase.
func checkFlags(e *Entity) error {
	if len(e.Flags) > 0 && e.Parent != "" {
		return fmt.Errorf("bitrix entity %q: a child has no command, so no flags of its own", e.Name)
	}
	var seen []string
	for _, f := range e.Flags {
		switch {
		case !flagName.MatchString(f.Name) || f.Name == "help":
			return fmt.Errorf("bitrix entity %q: flag %q: want a lower-case name with dashes, without the leading ones", e.Name, f.Name)
		case slices.Contains(seen, f.Name):
			return fmt.Errorf("bitrix entity %q: flag --%s declared twice", e.Name, f.Name)
		case f.Env != "" && !flagEnv.MatchString(f.Env):
			return fmt.Errorf("bitrix entity %q: flag --%s: variable %q is not an environment variable's name", e.Name, f.Name, f.Env)
		case f.Help == "" || f.Set == nil:
			return fmt.Errorf("bitrix entity %q: flag --%s needs a help line and a Set", e.Name, f.Name)
		case len(f.Phases) == 0:
			return fmt.Errorf("bitrix entity %q: flag --%s names no phase", e.Name, f.Name)
		}
		for _, p := range f.Phases {
			if _, err := ParsePhase(string(p)); err != nil {
				return fmt.Errorf("bitrix entity %q: flag --%s: %w", e.Name, f.Name, err)
			}
		}
		seen = append(seen, f.Name)
	}
	return nil
}
