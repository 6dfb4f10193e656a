package localstore

import (
	"path/filepath"
	"sync"
	"testing"
)

// Several processes may open one new profile at once (two imtui started
// with the same -profile, a UI and a bot): every Open succeeds, each
// migration applied once. (The interleaving is a race: many openers over
// many fresh files exercise it.)
func TestConcurrentFirstOpen(t *testing.T) {
	for round := range 50 {
		path := filepath.Join(t.TempDir(), "profile.db")
		var wg sync.WaitGroup
		errs := make([]error, 8)
		for i := range errs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				s, err := Open(path)
				if err == nil {
					s.Close()
				}
				errs[i] = err
			}()
		}
		wg.Wait()
		for _, err := range errs {
			if err != nil {
				t.Fatalf("round %d: concurrent Open of a new profile: %v", round, err)
			}
		}
	}
}
