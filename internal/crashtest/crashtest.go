// Package crashtest runs a command in a child process and kills it with SIGKILL at a random
// moment of a phase it announces, for the crash tests of the pipelines (bitrix, social): the
// fakes and databases live in the test and outlive the kills, and each rerun must converge.
//
// A child announces each phase on its standard output as a line "phase <name>", and "phase done"
// when it finishes; everything else it prints is ignored, and its standard error is kept for
// the test's failure message.
package crashtest

import (
	"bufio"
	"bytes"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Build compiles the command in dir (a package path such as "./testdata/crashchild") without
// the race detector, so that the child runs at production speed: killing it mid-work is the
// point.
func Build(t testing.TB, dir string) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), filepath.Base(dir))
	if out, err := exec.Command("go", "build", "-o", bin, dir).CombinedOutput(); err != nil {
		t.Fatalf("build the child %s: %v\n%s", dir, err, out)
	}
	return bin
}

// Child is one run of the child process.
type Child struct {
	cmd    *exec.Cmd
	phase  chan string // the phases it announces; closed when its stdout ends
	stderr bytes.Buffer
}

// Start starts bin with the test's environment plus env ("KEY=value").
func Start(t testing.TB, bin string, env ...string) *Child {
	t.Helper()
	c := &Child{cmd: exec.Command(bin), phase: make(chan string, 16)}
	c.cmd.Env = append(os.Environ(), env...)
	c.cmd.Stderr = &c.stderr
	out, err := c.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := c.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		defer close(c.phase)
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if p, ok := strings.CutPrefix(sc.Text(), "phase "); ok {
				c.phase <- p
			}
		}
		_, _ = io.Copy(io.Discard, out)
	}()
	return c
}

// Run lets the child run until phase starts and then for a random part of within before killing
// it; it returns the phase the child was in when killed (or the last it announced: "done" once
// it finished) and whether it was killed. An empty phase lets it finish. A child that fails on
// its own fails the test, with its standard error.
func (c *Child) Run(t testing.TB, phase string, within time.Duration, rng *rand.Rand) (last string, killed bool) {
	t.Helper()
	var kill <-chan time.Time
	for {
		select {
		case p, ok := <-c.phase:
			if ok {
				last = p
				if p == phase && kill == nil {
					kill = time.After(time.Duration(rng.Int64N(int64(within))))
				}
				continue
			}
			if err := c.cmd.Wait(); err != nil {
				t.Fatalf("child failed on its own after %q: %v\n%s", last, err, c.stderr.String())
			}
			return last, false
		case <-kill:
			if err := c.cmd.Process.Kill(); err != nil {
				t.Fatal(err)
			}
			_ = c.cmd.Wait()
			for p := range c.phase {
				last = p
			}
			return last, true
		}
	}
}

// TimedPhases runs the child to the end and returns how long each of its phases took; a child
// that does not reach "done" fails the test.
func (c *Child) TimedPhases(t testing.TB) map[string]time.Duration {
	t.Helper()
	took := map[string]time.Duration{}
	last, at := "", time.Now()
	for p := range c.phase {
		if last != "" {
			took[last] = time.Since(at)
		}
		last, at = p, time.Now()
	}
	if err := c.cmd.Wait(); err != nil || last != "done" {
		t.Fatalf("reference run ended after %q: %v\n%s", last, err, c.stderr.String())
	}
	return took
}
