package tui

import (
	"os/exec"
	"regexp"
	"runtime"
	"strings"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"
)

// urlPattern finds web addresses in a message.
var urlPattern = regexp.MustCompile(`https?://[^\s<>"'` + "`" + `]+`)

// linkSpans returns the byte ranges of the web addresses in text, without
// the punctuation that ends a sentence after one (a closing bracket stays
// when the address opened it).
func linkSpans(text string) [][2]int {
	if !strings.Contains(text, "://") {
		return nil
	}
	spans := urlPattern.FindAllStringIndex(text, -1)
	out := make([][2]int, 0, len(spans))
	for _, s := range spans {
		end := s[1]
		for end > s[0] {
			c := text[end-1]
			if strings.IndexByte(".,;:!?", c) >= 0 {
				end--
				continue
			}
			if open := map[byte]byte{')': '(', ']': '[', '}': '{'}[c]; open != 0 &&
				strings.Count(text[s[0]:end], string(open)) < strings.Count(text[s[0]:end], string(c)) {
				end--
				continue
			}
			break
		}
		if end-s[0] > len("https://") {
			out = append(out, [2]int{s[0], end})
		}
	}
	return out
}

// linksOf returns the web addresses in text, in order.
func linksOf(text string) []string {
	var out []string
	for _, s := range linkSpans(text) {
		out = append(out, text[s[0]:s[1]])
	}
	return out
}

// wrapLinked is wrap for a message's text (sanitized) whose web addresses
// become OSC 8 hyperlinks, underlined: every piece of an address that the
// wrapping puts on several lines links to the whole address, so a click
// on any of them opens all of it.
func (c cells) wrapLinked(s string, w int) []string {
	lines := c.wrap(s, w)
	spans := linkSpans(s)
	if len(spans) == 0 {
		return lines
	}
	at := 0 // where the text of the next line starts in s
	for i, l := range lines {
		off := strings.Index(s[at:], l)
		if l == "" || off < 0 {
			continue
		}
		off += at
		at = off + len(l)
		lines[i] = linkLine(s, l, off, spans)
	}
	return lines
}

// linkLine marks in line l, found at byte off of s, the parts of the
// addresses spans of s.
func linkLine(s, l string, off int, spans [][2]int) string {
	var b strings.Builder
	pos := 0 // in l
	for _, sp := range spans {
		start, end := max(sp[0], off)-off, min(sp[1], off+len(l))-off
		if start >= end {
			continue
		}
		b.WriteString(l[pos:start])
		b.WriteString(ansi.SetHyperlink(s[sp[0]:sp[1]]) + "\x1b[4m" + l[start:end] + "\x1b[24m" + ansi.ResetHyperlink())
		pos = end
	}
	if pos == 0 {
		return l
	}
	return b.String() + l[pos:]
}

// openLinks opens the link of message body, or asks which of its links.
func (p *chatPane) openLinks(body string) tea.Cmd {
	links := linksOf(sanitize(body))
	switch len(links) {
	case 0:
		return notice("no link in this message", false)
	case 1:
		return p.openURL(links[0])
	}
	p.ask(showDialogMsg{newChoice(p.com, "Open which link?", links, func(i int) tea.Cmd {
		return p.openURL(links[i])
	})})
	return nil
}

// openURL opens url with the system's opener (Options.OpenURL).
func (p *chatPane) openURL(url string) tea.Cmd {
	open := p.com.opts.OpenURL
	if open == nil {
		open = systemOpen
	}
	return func() tea.Msg {
		if err := open(url); err != nil {
			return noticeMsg{text: "could not open " + url + ": " + err.Error(), err: true}
		}
		return noticeMsg{text: "opened " + url}
	}
}

// systemOpen opens url in the desktop's browser, without waiting for it.
func systemOpen(url string) error {
	var cmd *exec.Cmd
	switch runtime.GOOS {
	case "darwin":
		cmd = exec.Command("open", url)
	case "windows":
		cmd = exec.Command("rundll32", "url.dll,FileProtocolHandler", url)
	default:
		cmd = exec.Command("xdg-open", url)
	}
	if err := cmd.Start(); err != nil {
		return err
	}
	go func() { _ = cmd.Wait() }() // reaped when it ends
	return nil
}
