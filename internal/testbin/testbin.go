// Package testbin builds this module's commands for the tests that run
// the real binaries (imserver, imtui): each command once per test
// process, without -race (a test runs them as a user would), into one
// temporary directory that Remove deletes.
package testbin

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
)

// module is the import path of this module's commands.
const module = "github.com/imcore/im/cmd/"

var (
	mu     sync.Mutex
	dir    string                // where the binaries go ("": not made yet)
	builds = map[string]*build{} // by command name
)

// build is one command's build, done once.
type build struct {
	once sync.Once
	path string
	err  error
}

// Path returns the path of the binary of command name (a directory under
// cmd/: "imserver", "imtui"), building it the first time a test of this
// process asks. A failed build fails the test with the compiler's output.
func Path(t testing.TB, name string) string {
	t.Helper()
	mu.Lock()
	b := builds[name]
	if b == nil {
		b = &build{}
		builds[name] = b
	}
	mu.Unlock()
	b.once.Do(func() { b.path, b.err = compile(name) })
	if b.err != nil {
		t.Fatal(b.err)
	}
	return b.path
}

// Remove deletes the binaries built so far; a package's TestMain calls it
// once m.Run has returned.
func Remove() {
	mu.Lock()
	defer mu.Unlock()
	if dir != "" {
		os.RemoveAll(dir)
		dir = ""
		builds = map[string]*build{}
	}
}

// compile builds command name into the binaries' directory.
func compile(name string) (string, error) {
	out, err := outDir()
	if err != nil {
		return "", err
	}
	goTool, err := goCommand()
	if err != nil {
		return "", err
	}
	bin := filepath.Join(out, name)
	cmd := exec.Command(goTool, "build", "-o", bin, module+name)
	if output, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build %s: %v\n%s", name, err, output)
	}
	return bin, nil
}

// outDir returns the binaries' directory, made on first use.
func outDir() (string, error) {
	mu.Lock()
	defer mu.Unlock()
	if dir == "" {
		d, err := os.MkdirTemp("", "im-bin-")
		if err != nil {
			return "", err
		}
		dir = d
	}
	return dir, nil
}

// goCommand returns the go command of $GOROOT, or else the one on PATH.
func goCommand() (string, error) {
	if root := os.Getenv("GOROOT"); root != "" {
		p := filepath.Join(root, "bin", "go")
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
	}
	p, err := exec.LookPath("go")
	if err != nil {
		return "", errors.Join(errors.New("the go command is needed to build the binaries"), err)
	}
	return p, nil
}
