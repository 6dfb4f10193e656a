package main

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/gorilla/websocket"

	"github.com/imcore/im/protocol"
)

// who is a connection to open: a user on a device.
type who struct{ user, device string }

// dialAll opens a connection for each of ws, at most -connect-concurrency
// at a time; on a failure it closes what it opened and returns the error.
// took is each connection's dial and hello.
func dialAll(ctx context.Context, cfg *Config, errs *errorLog, d *websocket.Dialer, ws []who) (conns []*conn, took []time.Duration, err error) {
	conns = make([]*conn, len(ws))
	took = make([]time.Duration, len(ws))
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		firstErr error
		sem      = make(chan struct{}, cfg.Concurrency)
	)
	for i, w := range ws {
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
		}
		if ctx.Err() != nil {
			break
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			t := now()
			c, err := dial(ctx, d, cfg.serverFor(i), w.user, w.device, errs)
			if err != nil {
				mu.Lock()
				if firstErr == nil {
					firstErr = err
					errs.add("dial", err.Error())
				}
				mu.Unlock()
				cancel()
				return
			}
			conns[i], took[i] = c, now()-t
		}()
	}
	wg.Wait()
	if firstErr == nil && ctx.Err() != nil {
		firstErr = ctx.Err()
	}
	if firstErr != nil {
		closeAll(conns)
		return nil, nil, firstErr
	}
	return conns, took, nil
}

// closeAll closes every connection (nil ones are skipped), in parallel.
func closeAll(conns []*conn) {
	var wg sync.WaitGroup
	for _, c := range conns {
		if c != nil {
			wg.Add(1)
			go func() { defer wg.Done(); c.close() }()
		}
	}
	wg.Wait()
}

// feedItem is one message to send while preparing a workload.
type feedItem struct{ conv string }

// feed sends items on c, a started connection, keeping window sends
// awaiting their sent, and returns the highest seq stored in each
// conversation. Any error answer fails the feed.
func feed(ctx context.Context, c *conn, items []feedItem, body string, window int) (map[string]int64, error) {
	type result struct {
		conv string
		seq  int64
		err  error
	}
	results := make(chan result, len(items)) // never blocks an answer, even after a failure
	slots := make(chan struct{}, window)
	go func() {
		for i, it := range items {
			select {
			case slots <- struct{}{}:
			case <-ctx.Done():
				return
			}
			send := &protocol.Send{Conv: it.conv, MsgID: fmt.Sprintf("f%d", i), Body: body, ClientTS: time.Now().UnixMilli()}
			ch := c.expect(send, "f")
			if err := c.write(send); err != nil {
				results <- result{err: err}
				return
			}
			go func() {
				data, _, err := c.await(ctx, ch)
				if err == nil {
					var f protocol.Frame
					if f, err = decode(data); err == nil {
						s, ok := f.(*protocol.Sent)
						if !ok {
							err = fmt.Errorf("send answered %s", f.FrameType())
						} else {
							results <- result{conv: s.Conv, seq: s.Seq}
							return
						}
					}
				}
				results <- result{err: err}
			}()
		}
	}()
	last := map[string]int64{}
	for range items {
		select {
		case r := <-results:
			if r.err != nil {
				return nil, fmt.Errorf("feeding as %s: %w", c.user, r.err)
			}
			last[r.conv] = max(last[r.conv], r.seq)
			<-slots
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	return last, nil
}
