package client

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"strings"
	"time"

	"github.com/gorilla/websocket"

	"github.com/imcore/im/protocol"
)

// helloTimeout bounds the wait for the welcome.
const helloTimeout = 20 * time.Second

// ErrWrongProfile is returned by Run when the server welcomes a user other
// than the one the profile belongs to.
var ErrWrongProfile = errors.New("the profile belongs to another user")

// ErrNoEndpoint is returned by Run when the URL names no WebSocket endpoint
// of imserver: the server answered the upgrade with a client error (a
// wrong path is 404). Retrying would not help.
var ErrNoEndpoint = errors.New("no imserver WebSocket endpoint at this address")

// ErrNeedsUser is returned by Run when a hello with a token but no user is
// refused by a server that names users itself (dev auth): it needs the
// user, and ignores tokens.
var ErrNeedsUser = errors.New("this server names users itself (dev auth): give the user, not a token")

// permanentError marks a failure that retrying cannot cure.
type permanentError struct{ err error }

func (e *permanentError) Error() string { return e.err.Error() }
func (e *permanentError) Unwrap() error { return e.err }

// Run keeps a connection to the server until ctx is done: it dials, says
// hello and, once welcomed, sends the outbox, syncs the session lists and
// fills history gaps, then handles pushes; on any drop it reconnects after
// a jittered exponential backoff (reporting ConnChanged{Offline} with the
// retry time and the cause). It returns nil when ctx is done, and an error
// when the server refuses the hello (a bad token, an unauthorized user, a
// protocol it does not speak) or welcomes another user than the
// profile's: retrying would not help, the UI should show it.
func (c *Client) Run(ctx context.Context) (err error) {
	c.mu.Lock()
	if c.running {
		c.mu.Unlock()
		return errors.New("client: Run is already running")
	}
	c.running = true
	c.mu.Unlock()
	defer func() {
		c.mu.Lock()
		c.running = false
		c.mu.Unlock()
		c.failQueue(ErrStopped)
		c.setConn(Conn{State: Stopped, Err: err})
	}()
	attempt := 0 // rounds of every endpoint failed in a row
	cur := 0     // the endpoint to try next
	failed := 0  // endpoints failed in this round
	for {
		url := c.urls[cur]
		c.setConn(Conn{State: Connecting, URL: url})
		welcomed, err := c.connect(ctx, url)
		if ctx.Err() != nil {
			return nil
		}
		if perm := (*permanentError)(nil); errors.As(err, &perm) {
			return perm.err
		}
		if welcomed {
			attempt, failed = 0, 0
		}
		// The next endpoint of the deployment is tried at once; the wait
		// comes when each has failed in turn.
		cur = (cur + 1) % len(c.urls)
		if failed++; failed < len(c.urls) {
			c.log.Info("disconnected, trying the next server", "url", url, "err", err, "next", c.urls[cur])
			continue
		}
		failed = 0
		delay := backoff(c.cfg.MinBackoff, c.cfg.MaxBackoff, attempt)
		attempt++
		c.log.Info("disconnected", "url", url, "err", err, "retry_in", delay)
		c.setConn(Conn{State: Offline, RetryAt: c.now().Add(delay), Err: err, URL: url})
		wait := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			wait.Stop()
			return nil
		case <-wait.C:
		case <-c.retry:
			wait.Stop()
			c.log.Info("retrying now")
		}
	}
}

// backoff returns the wait before attempt n (0 for the first retry): an
// exponential of minWait capped at maxWait, with jitter drawn from its
// upper half so that many clients do not retry in step.
func backoff(minWait, maxWait time.Duration, n int) time.Duration {
	d := maxWait
	if n < 32 && minWait<<n < maxWait && minWait<<n > 0 {
		d = minWait << n
	}
	return d/2 + rand.N(d/2+1)
}

// connect makes one connection to url and serves it until it ends.
// welcomed says whether the server accepted the hello.
func (c *Client) connect(ctx context.Context, url string) (welcomed bool, err error) {
	dialCtx, cancel := context.WithTimeout(ctx, helloTimeout)
	defer cancel()
	ws, resp, err := c.cfg.Dialer.DialContext(dialCtx, url, nil)
	if err != nil {
		if resp != nil && wrongAddress(resp.StatusCode) {
			return false, &permanentError{fmt.Errorf("%w: %s answered HTTP %d", ErrNoEndpoint, url, resp.StatusCode)}
		}
		return false, fmt.Errorf("dial %s: %w", url, err)
	}
	defer ws.Close()
	// The hello blocks in a read; ending ctx closes the socket under it.
	stop := context.AfterFunc(ctx, func() { ws.Close() })
	welcome, err := c.hello(ws)
	if !stop() {
		return false, ctx.Err()
	}
	if err != nil {
		return false, err
	}
	if err := c.adoptUser(welcome.User); err != nil {
		return false, err
	}
	return true, newLink(c, ws, url).run(ctx)
}

// hello says hello and waits for the welcome.
func (c *Client) hello(ws *websocket.Conn) (*protocol.Welcome, error) {
	id := c.nextID()
	hello := &protocol.Hello{Ref: protocol.Ref{ID: id}, Protocol: protocol.Version, User: c.cfg.User, Device: c.Device(), Token: c.cfg.Token}
	ws.SetWriteDeadline(time.Now().Add(helloTimeout))
	if err := ws.WriteMessage(websocket.TextMessage, protocol.MustEncode(hello)); err != nil {
		return nil, fmt.Errorf("hello: %w", err)
	}
	c.countSent(hello.FrameType())
	ws.SetReadDeadline(time.Now().Add(helloTimeout))
	for {
		_, data, err := ws.ReadMessage()
		if err != nil {
			return nil, fmt.Errorf("hello: %w", err)
		}
		f, _, perr := protocol.DecodeServerFrame(data)
		if perr != nil || requestID(f) != id {
			continue
		}
		switch f := f.(type) {
		case *protocol.Welcome:
			return f, nil
		case *protocol.ErrorFrame:
			err := fmt.Errorf("hello refused: %w", answerError(f))
			if c.devServerRefusedToken(f) {
				err = fmt.Errorf("%w (the server said: %s)", ErrNeedsUser, f.Message)
			}
			if f.Code == protocol.CodeUnauthorized || f.Code == protocol.CodeInvalid {
				return nil, &permanentError{err}
			}
			return nil, err
		}
	}
}

// wrongAddress says an HTTP status answering the WebSocket upgrade means
// the address is wrong, not that the server is unwell: a client error,
// but for a timeout or too many requests, which pass.
func wrongAddress(status int) bool {
	return status >= 400 && status < 500 && status != http.StatusRequestTimeout && status != http.StatusTooManyRequests
}

// devServerRefusedToken says f refuses a hello that gave a token and no
// user because the server names users itself (dev auth). The protocol does
// not name the auth mode; a server that checks tokens speaks of the token
// in every refusal, one in dev mode of the user id it lacks.
func (c *Client) devServerRefusedToken(f *protocol.ErrorFrame) bool {
	return f.Code == protocol.CodeUnauthorized && c.cfg.Token != "" && c.cfg.User == "" &&
		!strings.Contains(strings.ToLower(f.Message), "token")
}

// adoptUser checks the welcomed user against the profile and records it.
func (c *Client) adoptUser(user string) error {
	stored, err := c.store.User()
	if err != nil {
		return err
	}
	if stored != "" && stored != user {
		return &permanentError{fmt.Errorf("%w: welcomed as %q, the profile is %q's", ErrWrongProfile, user, stored)}
	}
	if stored == "" {
		if err := c.store.SetUser(user); err != nil {
			return err
		}
	}
	c.mu.Lock()
	c.user = user
	c.mu.Unlock()
	return nil
}
