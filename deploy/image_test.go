package deploy

import (
	"debug/elf"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestReleaseBinaryIsStatic builds the binary the way the Dockerfile does (scripts/build.sh,
// which `make build` runs too) and checks that it needs nothing from the image it runs in:
// static (no dynamic loader, no shared libraries), with its version stamped. No Docker engine
// is needed; the Dockerfile is checked to run that very script on a distroless base as a
// non-root user.
func TestReleaseBinaryIsStatic(t *testing.T) {
	t.Parallel()
	dockerfile, err := os.ReadFile("../Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`(?m)^RUN scripts/build\.sh /out/ingest "\$\{VERSION\}"`, `(?m)^FROM gcr\.io/distroless/static-debian\d+:nonroot$`,
		`(?m)^USER 65532:65532$`, `(?m)^COPY --from=build /out/ingest /usr/local/bin/ingest$`} {
		if !regexp.MustCompile(want).Match(dockerfile) {
			t.Errorf("Dockerfile does not match %s", want)
		}
	}
	makefile, err := os.ReadFile("../Makefile")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(makefile), "scripts/build.sh $(BIN)/ingest $(VERSION)") {
		t.Error("make build does not run scripts/build.sh")
	}

	bin := filepath.Join(t.TempDir(), "ingest")
	if out, err := exec.Command("../scripts/build.sh", bin, "v0.0.0-imagetest").CombinedOutput(); err != nil {
		t.Fatalf("scripts/build.sh: %v\n%s", err, out)
	}
	f, err := elf.Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			t.Error("the binary asks for a dynamic loader (PT_INTERP): it is not static")
		}
	}
	if libs, err := f.ImportedLibraries(); err != nil || len(libs) > 0 {
		t.Errorf("the binary needs shared libraries %v (%v)", libs, err)
	}
	out, err := exec.Command(bin, "version").Output()
	if err != nil || strings.TrimSpace(string(out)) != "ingest v0.0.0-imagetest" {
		t.Errorf("ingest version = %q (%v), want the stamped version", out, err)
	}
}
