// Command imdemo fills a running imserver (dev auth) with a little demo
// data: chats between alice, bob and carol, each with a display name, a
// group, an account filed under a folder and a sub-business with a few
// chats. bob has read alice's messages (blue ticks on her screen); carol
// has read receipts off, so alice's message to her, read, stays at two
// grey ticks. scripts/demo.sh runs it after filing the accounts with
// imserver account set.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"strconv"
	"time"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/gorilla/websocket"

	"github.com/imcore/im/protocol"
)

func main() {
	server := flag.String("server", "ws://127.0.0.1:7070/ws", "imserver WebSocket URL")
	flag.Usage = func() {
		fmt.Fprintln(os.Stderr, "usage: imdemo [-server URL]\n\nSeeds demo chats into a running imserver that uses dev auth.")
		flag.PrintDefaults()
	}
	flag.Parse()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := seed(ctx, *server); err != nil {
		fmt.Fprintln(os.Stderr, "imdemo:", err)
		os.Exit(1)
	}
}

// seed writes the demo conversations.
func seed(ctx context.Context, url string) error {
	alice, bob, carol := &user{name: "alice"}, &user{name: "bob"}, &user{name: "carol"}
	news, orders, support := &user{name: "news"}, &user{name: "shop-orders"}, &user{name: "shop-support"}
	for _, u := range []*user{alice, bob, carol, news, orders, support} {
		if err := u.connect(ctx, url); err != nil {
			return err
		}
		defer u.close()
	}
	ab, _ := protocol.DirectConv("alice", "bob")
	ac, _ := protocol.DirectConv("alice", "carol")
	steps := []func() error{
		func() error { return alice.settings(map[string]any{"name": "Alice"}) },
		func() error { return bob.settings(map[string]any{"name": "Bob"}) },
		// carol reads, but nobody sees it: her chat's ticks stay grey.
		func() error { return carol.settings(map[string]any{"name": "Carol", "read_receipts": false}) },
		func() error { return news.settings(map[string]any{"name": "Weekly News"}) },
		func() error { return alice.send(ab, "hey bob 👋 — this is imtui") },
		func() error { return bob.send(ab, "hi alice! ticks turn blue when I read") },
		func() error {
			return alice.send(ab, "press ? in imtui for every key: p pins a chat, m mutes it, S sets your name")
		},
		func() error { return bob.read(ab, alice.last[ab]) },
		func() error { return carol.send(ac, "lunch tomorrow?") },
		func() error { return alice.send(ac, "sure — 12:30 at the usual place?") },
		func() error { return carol.read(ac, alice.last[ac]) },
		func() error {
			g, err := alice.request(&protocol.CreateGroup{Title: "launch crew", Members: []string{"bob", "carol"}, Key: "demo-crew"})
			if err != nil {
				return err
			}
			conv := g.(*protocol.Group).Conv
			for _, s := range []struct {
				u    *user
				body string
			}{{alice, "welcome to the launch crew"}, {carol, "release notes are in the doc"}, {bob, "I'll run the load test tonight"}} {
				if err := s.u.send(conv, s.body); err != nil {
					return err
				}
			}
			return nil
		},
		func() error {
			return news.send(mustDirect("news", "alice"), "This week: group ticks are exact (filed under promotions)")
		},
		func() error {
			return news.send(mustDirect("news", "bob"), "This week: group ticks are exact (filed under promotions)")
		},
		func() error { return orders.send(mustDirect("shop-orders", "bob"), "Your order #1042 has shipped") },
		func() error { return support.send(mustDirect("shop-support", "bob"), "How did we do? Reply 1-5") },
	}
	for _, step := range steps {
		if err := step(); err != nil {
			return err
		}
	}
	return nil
}

func mustDirect(a, b string) string {
	conv, ok := protocol.DirectConv(a, b)
	if !ok {
		panic("bad demo user ids " + a + ", " + b)
	}
	return conv
}

// user is one demo user's connection.
type user struct {
	name string
	ws   *websocket.Conn
	next int
	last map[string]int64 // the seq of the user's newest message, by conversation
}

func (u *user) connect(ctx context.Context, url string) error {
	ws, _, err := websocket.DefaultDialer.DialContext(ctx, url, nil)
	if err != nil {
		return fmt.Errorf("cannot reach %s: %w", url, err)
	}
	u.ws = ws
	_, err = u.request(&protocol.Hello{Protocol: protocol.Version, User: u.name, Device: "imdemo"})
	return err
}

func (u *user) close() { u.ws.Close() }

func (u *user) send(conv, body string) error {
	u.next++
	msgID := "demo-" + u.name + "-" + strconv.Itoa(u.next)
	answer, err := u.request(&protocol.Send{Conv: conv, MsgID: msgID, Body: body, ClientTS: time.Now().UnixMilli()})
	if err != nil {
		return err
	}
	if u.last == nil {
		u.last = map[string]int64{}
	}
	u.last[conv] = answer.(*protocol.Sent).Seq
	return nil
}

// read marks conv read up to seq, as a client does once it showed it.
func (u *user) read(conv string, seq int64) error {
	_, err := u.request(&protocol.Read{Marks: []protocol.Mark{{Conv: conv, Seq: seq}}})
	return err
}

// settings changes the user's settings (name, last_seen, read_receipts).
func (u *user) settings(change map[string]any) error {
	raw, err := json.Marshal(change)
	if err != nil {
		return err
	}
	_, err = u.request(&protocol.SettingsRequest{Settings: jsontext.Value(raw)})
	return err
}

// request writes f with a fresh id and returns its answer, skipping pushes.
func (u *user) request(f protocol.Frame) (protocol.Frame, error) {
	u.next++
	id := "r" + strconv.Itoa(u.next)
	protocol.SetRequestID(f, id)
	data, err := protocol.Encode(f)
	if err != nil {
		return nil, err
	}
	if err := u.ws.WriteMessage(websocket.TextMessage, data); err != nil {
		return nil, err
	}
	u.ws.SetReadDeadline(time.Now().Add(10 * time.Second))
	for {
		_, data, err := u.ws.ReadMessage()
		if err != nil {
			return nil, fmt.Errorf("%s: %w", u.name, err)
		}
		answer, _, perr := protocol.DecodeServerFrame(data)
		if perr != nil {
			return nil, fmt.Errorf("%s: undecodable answer: %v", u.name, perr)
		}
		r, ok := answer.(interface{ RequestID() string })
		if !ok || r.RequestID() != id {
			continue
		}
		if e, isErr := answer.(*protocol.ErrorFrame); isErr {
			return nil, errors.New(u.name + ": " + string(e.Code) + ": " + e.Message)
		}
		return answer, nil
	}
}
