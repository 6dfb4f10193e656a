package main

import (
	"fmt"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strings"
)

// result is what check found: the broken references, and how many links
// and repository paths it checked.
type result struct {
	problems []string
	links    int
	paths    int
}

var (
	// inlineLink is the target of a markdown link or image: ](target) or
	// ](target "title").
	inlineLink = regexp.MustCompile(`\]\(([^)\s]+)(?:\s+"[^"]*")?\)`)
	// refLink is a link reference definition: [name]: target.
	refLink = regexp.MustCompile(`^\s{0,3}\[[^\]]+\]:\s+(\S+)`)
	// codeSpan is a backquoted span on one line.
	codeSpan = regexp.MustCompile("`([^`]+)`")
	// scheme starts an absolute URL (https:, mailto:, s3:…).
	scheme = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9+.-]*:`)
	// lineSuffix is a line number after a file name (file.go:12).
	lineSuffix = regexp.MustCompile(`:\d+$`)
	// extension ends a file name.
	extension = regexp.MustCompile(`\.(go|md|sh|js|sql|json|golden|txt|txtar|mod|sum|ya?ml)$`)
)

// check reads each document (a path relative to root) and returns the
// links and backquoted repository paths in it that lead nowhere.
func check(root string, docs []string) (result, error) {
	var r result
	top, err := topLevel(root)
	if err != nil {
		return r, err
	}
	anchors := map[string]map[string]bool{} // per document read, its headings' anchors
	anchorsOf := func(doc string) (map[string]bool, error) {
		if a, ok := anchors[doc]; ok {
			return a, nil
		}
		data, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(doc)))
		if err != nil {
			return nil, err
		}
		anchors[doc] = headingAnchors(string(data))
		return anchors[doc], nil
	}
	for _, doc := range docs {
		doc = filepath.ToSlash(filepath.Clean(doc))
		data, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(doc)))
		if err != nil {
			return r, err
		}
		bad := func(line int, format string, args ...any) {
			r.problems = append(r.problems, fmt.Sprintf("%s:%d: %s", doc, line, fmt.Sprintf(format, args...)))
		}
		for i, line := range proseLines(string(data)) {
			if line == "" {
				continue
			}
			n := i + 1
			var targets []string
			for _, m := range inlineLink.FindAllStringSubmatch(line, -1) {
				targets = append(targets, m[1])
			}
			if m := refLink.FindStringSubmatch(line); m != nil {
				targets = append(targets, m[1])
			}
			for _, target := range targets {
				if scheme.MatchString(target) {
					continue // a URL: not the repository's to answer for
				}
				r.links++
				file, anchor, _ := strings.Cut(target, "#")
				dest := doc
				if file != "" {
					dest = path.Clean(path.Join(path.Dir(doc), file))
					if dest == ".." || strings.HasPrefix(dest, "../") {
						bad(n, "link %s leads out of the repository", target)
						continue
					}
					if _, err := os.Stat(filepath.Join(root, filepath.FromSlash(dest))); err != nil {
						bad(n, "link %s: no file or directory %s", target, dest)
						continue
					}
				}
				if anchor == "" || !strings.HasSuffix(dest, ".md") {
					continue
				}
				a, err := anchorsOf(dest)
				if err != nil {
					return r, err
				}
				if !a[anchor] {
					bad(n, "link %s: %s has no heading whose anchor is #%s", target, dest, anchor)
				}
			}
			for _, m := range codeSpan.FindAllStringSubmatch(inlineLink.ReplaceAllString(line, "]"), -1) {
				p, ok := repoPath(m[1], top)
				if !ok {
					continue
				}
				r.paths++
				if !exists(root, p) {
					bad(n, "`%s`: no file or directory %s in the repository", m[1], p)
				}
			}
		}
	}
	return r, nil
}

// proseLines returns the document's lines with those of fenced code
// blocks (``` or ~~~) emptied, so that line numbers stay as they are.
func proseLines(doc string) []string {
	lines := strings.Split(doc, "\n")
	fence := ""
	for i, l := range lines {
		t := strings.TrimLeft(l, " ")
		switch {
		case fence != "":
			if strings.HasPrefix(t, fence) && strings.TrimSpace(strings.TrimLeft(t, fence[:1])) == "" {
				fence = ""
			}
			lines[i] = ""
		case strings.HasPrefix(t, "```"), strings.HasPrefix(t, "~~~"):
			fence = t[:3]
			lines[i] = ""
		}
	}
	return lines
}

// topLevel lists the names at the repository's root, hidden ones left out.
func topLevel(root string) (map[string]bool, error) {
	entries, err := os.ReadDir(root)
	if err != nil {
		return nil, err
	}
	top := map[string]bool{}
	for _, e := range entries {
		if !strings.HasPrefix(e.Name(), ".") {
			top[e.Name()] = true
		}
	}
	return top, nil
}

// repoPath says whether a backquoted span names a repository path, and
// which: no blank in it, its first element at the root (a leading ./
// aside), and a slash in it or a file extension at its end. A Go package
// pattern's /... and a line number's :N are left off.
func repoPath(span string, top map[string]bool) (string, bool) {
	p := strings.TrimPrefix(span, "./")
	if strings.ContainsAny(p, " \t") {
		return "", false
	}
	p = strings.TrimSuffix(lineSuffix.ReplaceAllString(p, ""), "/...")
	if p == "" || scheme.MatchString(p) {
		return "", false
	}
	first, _, _ := strings.Cut(p, "/")
	if !top[first] || !strings.Contains(p, "/") && !extension.MatchString(p) {
		return "", false
	}
	return path.Clean(p), true
}

// exists reports whether p, a slash-separated path relative to root that
// may hold * wildcards, names at least one file or directory.
func exists(root, p string) bool {
	full := filepath.Join(root, filepath.FromSlash(p))
	if strings.ContainsAny(p, "*?[") {
		m, err := filepath.Glob(full)
		return err == nil && len(m) > 0
	}
	_, err := os.Stat(full)
	return err == nil
}
