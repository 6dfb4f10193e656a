package server

import "github.com/imcore/im/server/store"

// backendAs returns the first of be and the backends it wraps (a backend
// wrapping another says which with Unwrap) that is a T: what
// the server uses of a backend when it offers it (token epochs, archiving,
// health, counts).
func backendAs[T any](be store.Backend) (T, bool) {
	for be != nil {
		if t, ok := be.(T); ok {
			return t, true
		}
		w, ok := be.(interface{ Unwrap() store.Backend })
		if !ok {
			break
		}
		be = w.Unwrap()
	}
	var zero T
	return zero, false
}
