package tui

import (
	"os"
	"regexp"
	"testing"
)

// TestReadmeShowsTheTicksDrawn checks that the glyphs the README and the
// client's manual (docs/IMTUI.md) promise for each tick state are the
// ones the client draws (the README once promised 🕓 for a message waiting
// for the server, where the client draws ◷).
func TestReadmeShowsTheTicksDrawn(t *testing.T) {
	re := regexp.MustCompile(`own messages carry their tick:\s+(\S+) waiting for the server,\s+(\S+) sent,\s+grey (\S+) delivered to every member,\s+blue (\S+) read by every member`)
	plainRe := regexp.MustCompile("without colours,\\s+`NO_COLOR`, read is (\\S+)\\)")
	for _, doc := range []string{"../README.md", "../docs/IMTUI.md"} {
		text, err := os.ReadFile(doc)
		if err != nil {
			t.Fatal(err)
		}
		m := re.FindSubmatch(text)
		if m == nil {
			t.Errorf("%s no longer lists the tick glyphs in the sentence this test reads", doc)
			continue
		}
		for i, want := range []string{glyphPending, glyphSent, glyphDelivered, glyphRead} {
			if got := string(m[i+1]); got != want {
				t.Errorf("%s shows %q for the %s tick, the client draws %q", doc, got, []string{"pending", "sent", "delivered", "read"}[i], want)
			}
		}
		plain := plainRe.FindSubmatch(text)
		if plain == nil || string(plain[1]) != glyphReadPlain {
			t.Errorf("%s should say that without colours read is %s: %q", doc, glyphReadPlain, plain)
		}
	}
}
