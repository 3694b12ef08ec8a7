// Package crashtest runs a command in a child process and kills it with SIGKILL at a random
// moment of a phase it announces, for the crash tests of the pipelines (bitrix, social): the
// fakes and databases live in the test and outlive the kills, and each rerun must converge. It
// also freezes a child (SIGSTOP, as a lost node or a stalled VM looks to the database) and thaws
// it, and sends it signals, for the tests of what a run does when its peers vanish (run).
//
// A child announces each phase on its standard output as a line "phase <name>", and "phase done"
// when it finishes; everything else it prints is ignored, and its standard error is kept for
// the test's failure message.
package crashtest

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
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
	stderr lockedBuffer
}

// lockedBuffer is the child's standard error, read by the test while the child writes it.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// Start starts bin with the test's environment plus env ("KEY=value").
func Start(t testing.TB, bin string, env ...string) *Child {
	t.Helper()
	return StartArgs(t, bin, nil, env...)
}

// StartArgs is Start with command-line arguments. A child still alive when the test ends is
// thawed and killed.
func StartArgs(t testing.TB, bin string, args []string, env ...string) *Child {
	t.Helper()
	c := &Child{cmd: exec.Command(bin, args...), phase: make(chan string, 16)}
	c.cmd.Env = append(os.Environ(), env...)
	c.cmd.Stderr = &c.stderr
	out, err := c.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := c.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if c.cmd.ProcessState == nil {
			_ = c.cmd.Process.Signal(syscall.SIGCONT)
			_ = c.cmd.Process.Kill()
			_ = c.cmd.Wait()
		}
	})
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

// Pid is the child's process id.
func (c *Child) Pid() int { return c.cmd.Process.Pid }

// Stderr is what the child wrote on its standard error so far.
func (c *Child) Stderr() string { return c.stderr.String() }

// WaitPhase reads the child's phases until it announces phase, failing the test when the child
// ends first or within passes.
func (c *Child) WaitPhase(t testing.TB, phase string, within time.Duration) {
	t.Helper()
	deadline := time.After(within)
	for {
		select {
		case p, ok := <-c.phase:
			if !ok {
				t.Fatalf("child ended before phase %q:\n%s", phase, c.Stderr())
			}
			if p == phase {
				return
			}
		case <-deadline:
			t.Fatalf("child did not reach phase %q within %s:\n%s", phase, within, c.Stderr())
		}
	}
}

// WaitStderr waits until the child's standard error holds s, failing the test when it does
// not within the given time.
func (c *Child) WaitStderr(t testing.TB, s string, within time.Duration) {
	t.Helper()
	for end := time.Now().Add(within); !strings.Contains(c.Stderr(), s); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(end) {
			t.Fatalf("child did not write %q within %s:\n%s", s, within, c.Stderr())
		}
	}
}

// Freeze stops the child with SIGSTOP: its connections stay open and their peer says nothing
// more, as with a lost node or a stalled VM (the kernel still answers TCP keepalives, so only
// the server's own timeouts end its sessions).
func (c *Child) Freeze(t testing.TB) { c.Signal(t, syscall.SIGSTOP) }

// Thaw resumes a frozen child with SIGCONT.
func (c *Child) Thaw(t testing.TB) { c.Signal(t, syscall.SIGCONT) }

// Signal sends sig to the child.
func (c *Child) Signal(t testing.TB, sig os.Signal) {
	t.Helper()
	if err := c.cmd.Process.Signal(sig); err != nil {
		t.Fatalf("signal the child (%v): %v", sig, err)
	}
}

// Wait lets the child run to its end, ignoring the phases it still announces, and returns its
// exit code (-1 when a signal killed it).
func (c *Child) Wait(t testing.TB) int {
	t.Helper()
	for range c.phase {
	}
	err := c.cmd.Wait()
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		t.Fatalf("wait for the child: %v", err)
	}
	return c.cmd.ProcessState.ExitCode()
}
