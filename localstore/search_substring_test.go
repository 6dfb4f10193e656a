package localstore

import (
	"slices"
	"testing"
)

// TestSearchFindsSubstringsInAnyScript checks that a search finds what
// it is given anywhere in a message, inside a word and in scripts that
// put no space between words, short queries included.
func TestSearchFindsSubstringsInAnyScript(t *testing.T) {
	s, _ := openTemp(t)
	for i, body := range []string{"offline msg", "明日京都に行きます", "100% sure", "nothing", "Ünïcode Straße"} {
		m := msg(conv, int64(i+1), "bob")
		m.Body = body
		mustPut(t, s, m)
	}
	for _, tc := range []struct {
		query string
		want  []int64
	}{
		{"ffline", []int64{1}},  // inside a word
		{"京都", []int64{2}},      // two characters of a script without spaces
		{"京都に行", []int64{2}},    // longer, through the index
		{"京", []int64{2}},       // one character
		{"0%", []int64{3}},      // short, % is text, not a wildcard
		{"OFF msg", []int64{1}}, // every word, any case
		{"fl", []int64{1}},      // short, inside a word
		{"unicode", []int64{5}}, // without accents
		{"_", nil},              // _ is text, not a wildcard
		{"京都 nothing", nil},     // every word is needed
		{"trasse", nil},         // ß is not ss
	} {
		got, err := s.SearchMessages(conv, tc.query, 10)
		if err != nil {
			t.Fatalf("search %q: %v", tc.query, err)
		}
		if g := seqs(got); !slices.Equal(g, tc.want) {
			t.Errorf("search %q = %v, want %v", tc.query, g, tc.want)
		}
	}
}

// TestSearchAllChats checks that a search with no conversation looks in
// every chat, newest first across them.
func TestSearchAllChats(t *testing.T) {
	s, _ := openTemp(t)
	a := msg(conv, 1, "bob")
	a.Body, a.ServerTS = "see you offline", 100
	b := msg("d:alice:carol", 1, "carol")
	b.Body, b.ServerTS = "offline again", 200
	mustPut(t, s, a)
	mustPut(t, s, b)
	got, err := s.SearchMessages("", "ffline", 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].Conv != "d:alice:carol" || got[1].Conv != conv {
		t.Fatalf("search of every chat = %+v", got)
	}
}
