package server

import (
	"context"
	"time"

	"github.com/imcore/im/server/store"
)

// archiveEvery is how often a server with Config.ArchiveOlderThan set
// moves old bodies to cold storage.
const archiveEvery = time.Hour

// startArchiving runs the backend's Archive now and then every
// archiveEvery, in the background, when ArchiveOlderThan is set and the
// backend archives; the returned stop ends it and waits for a run in
// progress to stop.
func (s *Server) startArchiving() (stop func()) {
	ar, ok := backendAs[store.Archiver](s.be)
	if s.cfg.ArchiveOlderThan <= 0 || !ok {
		return func() {}
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		ticker := time.NewTicker(archiveEvery)
		defer ticker.Stop()
		for {
			s.archiveOnce(ctx, ar)
			select {
			case <-ctx.Done():
				return
			case <-ticker.C:
			}
		}
	}()
	return func() {
		cancel()
		<-done
	}
}

// archiveOnce moves the bodies older than ArchiveOlderThan and logs what
// it did.
func (s *Server) archiveOnce(ctx context.Context, ar store.Archiver) {
	now := time.Now
	if s.cfg.Now != nil {
		now = s.cfg.Now
	}
	cutoff := now().Add(-s.cfg.ArchiveOlderThan)
	start := time.Now()
	moved, err := ar.Archive(ctx, cutoff.UnixMilli(), nil)
	if err != nil {
		if ctx.Err() == nil {
			s.log.Error("archive failed", "older_than", s.cfg.ArchiveOlderThan, "moved", moved, "err", err)
		}
		return
	}
	s.log.Info("archived", "older_than", s.cfg.ArchiveOlderThan, "moved", moved, "took", time.Since(start).Round(time.Millisecond))
}
