package localstore

import (
	"maps"
	"testing"
)

func TestDraftsSurviveARestart(t *testing.T) {
	s, path := openTemp(t)
	for conv, text := range map[string]string{"d:alice:bob": "half typed", "d:alice:carol": "for carol"} {
		if err := s.SetDraft(conv, text); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.SetDraft("d:alice:bob", "half typed draft"); err != nil {
		t.Fatal(err)
	}
	if err := s.SetDraft("d:alice:carol", ""); err != nil {
		t.Fatal(err)
	}
	s.Close()
	again, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer again.Close()
	got, err := again.Drafts()
	if want := map[string]string{"d:alice:bob": "half typed draft"}; err != nil || !maps.Equal(got, want) {
		t.Fatalf("drafts after a restart = %v, %v; want %v", got, err, want)
	}
}
