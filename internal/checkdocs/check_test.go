package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// repo writes files (slash-separated names, their contents) under a new
// directory and returns it.
func repo(t *testing.T, files map[string]string) string {
	t.Helper()
	root := t.TempDir()
	for name, body := range files {
		p := filepath.Join(root, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

// A broken link, a link to a heading that is not there and a backquoted
// path that names nothing are each reported with their line; what
// resolves is not.
func TestBrokenLinksAndPathsAreReported(t *testing.T) {
	root := repo(t, map[string]string{
		"scripts/test.sh":               "",
		"server/engine/owned.go":        "",
		"cmd/imserver/attack_a_test.go": "",
		"docs/OPERATIONS.md":            "# Operations\n\n## Health and status\n\n## Health and status\n",
		"README.md": strings.Join([]string{
			"# im",
			"[ops](docs/OPERATIONS.md), [health](docs/OPERATIONS.md#health-and-status), [again](docs/OPERATIONS.md#health-and-status-1)",
			"[gone](docs/GONE.md) and [no heading](docs/OPERATIONS.md#backup)",
			"`scripts/test.sh`, `./server/engine/owned.go`, `server/engine/`, `cmd/imserver/attack_*_test.go`, `server/engine/owned.go:12`",
			"`server/engine/shared.go` and `scripts/nope.sh`",
			"[up](../outside.md) and [here](#im) and [nowhere](#nowhere)",
		}, "\n"),
		"docs/SCALING.md": "[back](../README.md#im) [missing](PERFORMANCE.md)\n",
	})
	r, err := check(root, []string{"README.md", "docs/SCALING.md"})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"README.md:3: link docs/GONE.md: no file or directory docs/GONE.md",
		"README.md:3: link docs/OPERATIONS.md#backup: docs/OPERATIONS.md has no heading whose anchor is #backup",
		"README.md:5: `server/engine/shared.go`: no file or directory server/engine/shared.go in the repository",
		"README.md:5: `scripts/nope.sh`: no file or directory scripts/nope.sh in the repository",
		"README.md:6: link ../outside.md leads out of the repository",
		"README.md:6: link #nowhere: README.md has no heading whose anchor is #nowhere",
		"docs/SCALING.md:1: link PERFORMANCE.md: no file or directory docs/PERFORMANCE.md",
	}
	if got := strings.Join(r.problems, "\n"); got != strings.Join(want, "\n") {
		t.Errorf("problems:\n%s\nwant:\n%s", got, strings.Join(want, "\n"))
	}
	if r.links != 10 || r.paths != 7 {
		t.Errorf("checked %d links and %d paths, want 10 and 7", r.links, r.paths)
	}
}

// What is not a repository path is not checked: flags, variables,
// commands, placeholders, URLs, paths outside the repository, and
// anything inside a fenced code block.
func TestWhatIsNotARepositoryPathIsLeftAlone(t *testing.T) {
	root := repo(t, map[string]string{
		"server/server.go": "",
		"README.md": strings.Join([]string{
			"`-data`, `IM_LISTEN`, `go test ./...`, `DATA/blobs`, `s3://BUCKET`, `redis://host:6379/0`,",
			"`~/.cache/im-services`, `/tmp/imbench-data`, `server`, `im.db`, `ws://127.0.0.1:7070/ws`,",
			"[a site](https://example.com/x) [mail](mailto:a@example.com)",
			"```sh",
			"cat server/missing.go `server/missing.go` [x](missing.md)",
			"```",
			"~~~",
			"# not a heading",
			"~~~",
		}, "\n"),
	})
	r, err := check(root, []string{"README.md"})
	if err != nil {
		t.Fatal(err)
	}
	if len(r.problems) != 0 || r.links != 0 || r.paths != 0 {
		t.Errorf("checked %d links and %d paths, found %q; want none", r.links, r.paths, r.problems)
	}
	if a := headingAnchors("~~~\n# not a heading\n~~~\n"); len(a) != 0 {
		t.Errorf("a heading inside a fence gave anchors %v", a)
	}
}

// Anchors are GitHub's: punctuation and symbols dropped, blanks made
// hyphens, letters of any script kept.
func TestAnchorsAreGitHubs(t *testing.T) {
	for heading, want := range map[string]string{
		"Target 6: a node joining, leaving and dying under 100 × 4": "target-6-a-node-joining-leaving-and-dying-under-100--4",
		"11.13 HTTP endpoints (`server/server.go`)":                 "1113-http-endpoints-serverservergo",
		"What a message costs":                                      "what-a-message-costs",
		"Déjà vu_again":                                             "déjà-vu_again",
	} {
		if got := slug(heading); got != want {
			t.Errorf("slug(%q) = %q, want %q", heading, got, want)
		}
	}
}

// The repository's own documents name only what it holds.
func TestRepositoryDocsResolve(t *testing.T) {
	root := filepath.Join("..", "..")
	docs, err := defaultDocs(root)
	if err != nil {
		t.Fatal(err)
	}
	r, err := check(root, docs)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range r.problems {
		t.Error(p)
	}
}
