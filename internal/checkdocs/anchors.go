package main

import (
	"regexp"
	"strconv"
	"strings"
	"unicode"
)

// heading is an ATX heading line: # Title.
var heading = regexp.MustCompile(`^ {0,3}#{1,6}[ \t]+(.*?)(?:[ \t]+#+)?[ \t]*$`)

// headingAnchors returns the anchors of a document's headings, as GitHub
// makes them: lower case, every character but letters, digits, blanks,
// hyphens and underscores dropped, blanks made hyphens; a repeated anchor
// gets -1, -2… Headings inside fenced code blocks are none.
func headingAnchors(doc string) map[string]bool {
	anchors := map[string]bool{}
	seen := map[string]int{}
	for _, line := range proseLines(doc) {
		m := heading.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		a := slug(m[1])
		if n := seen[a]; n > 0 {
			anchors[a+"-"+strconv.Itoa(n)] = true
		} else {
			anchors[a] = true
		}
		seen[a]++
	}
	return anchors
}

// slug is GitHub's anchor of a heading's text.
func slug(text string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(text) {
		switch {
		case r == ' ':
			b.WriteByte('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.IsMark(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}
