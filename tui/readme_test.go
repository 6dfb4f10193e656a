package tui

import (
	"os"
	"regexp"
	"testing"
)

// TestReadmeShowsTheTicksDrawn checks bug 10: the glyphs the README
// promises for each tick state are the ones the client draws.
func TestReadmeShowsTheTicksDrawn(t *testing.T) {
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	re := regexp.MustCompile(`own messages carry their tick:\s+(\S+) waiting for the server,\s+(\S+) sent,\s+grey (\S+) delivered to every member,\s+blue (\S+) read by every member`)
	m := re.FindSubmatch(readme)
	if m == nil {
		t.Fatal("the README no longer lists the tick glyphs in the sentence this test reads")
	}
	for i, want := range []string{glyphPending, glyphSent, glyphDelivered, glyphRead} {
		if got := string(m[i+1]); got != want {
			t.Errorf("the README shows %q for the %s tick, the client draws %q", got, []string{"pending", "sent", "delivered", "read"}[i], want)
		}
	}
	plain := regexp.MustCompile("without colours,\\s+`NO_COLOR`, read is (\\S+)\\)").FindSubmatch(readme)
	if plain == nil || string(plain[1]) != glyphReadPlain {
		t.Errorf("the README should say that without colours read is %s: %q", glyphReadPlain, plain)
	}
}
