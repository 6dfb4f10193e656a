// Command checkdocs checks that the project's documents name only what a
// reader can open: every relative link of README.md, CONTRIBUTING.md and
// docs/*.md leads to a file or directory of the repository (and its
// #anchor to a heading of the document it leads to), and every backquoted
// repository path (`server/engine/owned.go`, `scripts/test.sh`) names a
// file or directory that exists. It prints each one that does not, as
// FILE:LINE: what, and exits 1; scripts/test.sh runs it before the tests.
//
//	go run ./internal/checkdocs              the documents, from the repository's root
//	go run ./internal/checkdocs FILE...      these documents only
//	go run ./internal/checkdocs -root DIR    the documents of the repository at DIR
//
// A backquoted span is taken for a repository path when it has no blank,
// its first element is a file or directory at the repository's root, and
// it has a slash or ends in a file extension: `go test ./...`, `-data`,
// `IM_LISTEN` or `DATA/blobs` are left alone.
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
)

func main() {
	root := flag.String("root", ".", "the repository's root directory")
	flag.Usage = func() {
		fmt.Fprintln(os.Stderr, "usage: checkdocs [-root DIR] [FILE...]")
		flag.PrintDefaults()
	}
	flag.Parse()
	docs := flag.Args()
	if len(docs) == 0 {
		var err error
		if docs, err = defaultDocs(*root); err != nil {
			fmt.Fprintln(os.Stderr, "checkdocs:", err)
			os.Exit(2)
		}
	}
	r, err := check(*root, docs)
	if err != nil {
		fmt.Fprintln(os.Stderr, "checkdocs:", err)
		os.Exit(2)
	}
	for _, p := range r.problems {
		fmt.Println(p)
	}
	if len(r.problems) > 0 {
		fmt.Fprintf(os.Stderr, "checkdocs: %d broken in %d documents: each names something the repository does not hold\n", len(r.problems), len(docs))
		os.Exit(1)
	}
	fmt.Fprintf(os.Stderr, "checkdocs: %d documents, %d links and %d repository paths, all found\n", len(docs), r.links, r.paths)
}

// defaultDocs lists the documents checked when none is named, relative to
// root: README.md, CONTRIBUTING.md and docs/*.md.
func defaultDocs(root string) ([]string, error) {
	var docs []string
	for _, name := range []string{"README.md", "CONTRIBUTING.md"} {
		if _, err := os.Stat(filepath.Join(root, name)); err == nil {
			docs = append(docs, name)
		}
	}
	more, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		return nil, err
	}
	for _, m := range more {
		rel, err := filepath.Rel(root, m)
		if err != nil {
			return nil, err
		}
		docs = append(docs, rel)
	}
	if len(docs) == 0 {
		return nil, fmt.Errorf("no README.md, CONTRIBUTING.md or docs/*.md under %s", root)
	}
	return docs, nil
}
