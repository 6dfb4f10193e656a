package server_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"golang.org/x/time/rate"

	"github.com/imcore/im/protocol"
	"github.com/imcore/im/server"
	"github.com/imcore/im/server/servertest"
)

// The cost of what PROTOCOL.md, "Replies, edits, deletions and reactions",
// adds to a message, measured end to end: a server on the backend
// IM_TEST_STORE names (SQLite by default) and clients over real
// WebSockets on loopback, in this process. The figures are in
// docs/PERFORMANCE.md.

// BenchmarkHistoryPage fetches one page of 20 messages of a group
// conversation of 1,000, again and again, over a WebSocket: plain, the 20
// as sent; with-relations, each of the 20 edited once by its sender and
// reacted to by four members with two distinct reactions, so that history
// returns each with edited_ts and a reactions aggregate. The contract keeps
// a target's state with the target so that such a page costs what a plain
// one does; the ratio of the two ns/op is that promise's measure. wire-B/page
// is the payload of the answer frame (the WebSocket header adds 4 bytes).
func BenchmarkHistoryPage(b *testing.B) {
	b.Run("plain", func(b *testing.B) { benchHistoryPage(b, false) })
	b.Run("with-relations", func(b *testing.B) { benchHistoryPage(b, true) })
}

const (
	benchHistoryMessages = 1000 // ordinary messages in the conversation
	benchPageAt          = 481  // the page's first seq: the middle of the conversation
	benchPage            = 20
)

// benchReactors react to every message of the page, each with its
// reaction; two distinct reactions, so the aggregate has two entries of
// two users.
var benchReactors = []struct{ user, body string }{
	{"carol", "👍"}, {"dave", "❤️"}, {"erin", "👍"}, {"frank", "❤️"},
}

func benchHistoryPage(b *testing.B, relations bool) {
	env, clients := benchHistoryClients(b)
	read := setupHistoryPage(b, env, clients, relations)
	var wire int64
	for b.Loop() {
		wire += int64(len(read()))
	}
	b.ReportMetric(float64(wire)/float64(b.N), "wire-B/page")
}

// BenchmarkHistoryPagePaired is BenchmarkHistoryPage's two pages, of two
// conversations of one server, read one after the other in each op (in
// turn first), so that both see the same load on a shared machine (where the two
// sub-benchmarks of BenchmarkHistoryPage, run one after the other, may
// not): it reports the time of each page and their ratio.
func BenchmarkHistoryPagePaired(b *testing.B) {
	env, clients := benchHistoryClients(b)
	reads := []func() []byte{setupHistoryPage(b, env, clients, false), setupHistoryPage(b, env, clients, true)}
	var took [2]time.Duration
	for n := 0; b.Loop(); n++ {
		for k := range reads {
			i := (k + n) % 2 // each first in every other op
			start := time.Now()
			reads[i]()
			took[i] += time.Since(start)
		}
	}
	b.ReportMetric(float64(took[0].Nanoseconds())/float64(b.N), "plain-ns/page")
	b.ReportMetric(float64(took[1].Nanoseconds())/float64(b.N), "related-ns/page")
	b.ReportMetric(float64(took[1])/float64(took[0]), "ratio")
}

// benchHistoryUsers are the members of a history benchmark's group.
var benchHistoryUsers = []string{"alice", "brian", "carol", "dave", "erin", "frank", "reader"}

// benchHistoryClients starts a server and connects every one of
// benchHistoryUsers.
func benchHistoryClients(b *testing.B) (*servertest.Env, map[string]*benchClient) {
	env := servertest.Start(b, benchUnlimited)
	clients := map[string]*benchClient{}
	for _, u := range benchHistoryUsers {
		clients[u] = dialBench(b, env, u, "bench")
	}
	return env, clients
}

// setupHistoryPage makes a group conversation of BenchmarkHistoryPage,
// its page's messages with relations or not, checks the page once in
// full, and returns the page's read: it returns the answer, checked to
// be the same as the first after its id.
func setupHistoryPage(b *testing.B, env *servertest.Env, clients map[string]*benchClient, relations bool) (read func() []byte) {
	users := benchHistoryUsers
	g := benchDecode[*protocol.Group](b, clients["alice"].request(&protocol.CreateGroup{Title: "bench", Members: users[1:]}))
	conv := g.Conv

	// The messages, alice's and brian's in turn, sent without waiting
	// (as a client's outbox does) so that the writer commits them
	// together. The two connections' sends interleave in any order:
	// message i takes a seq from 2 on (1 is the group's creation) that
	// its sent answer tells. Names, msg_ids and bodies are of one length,
	// so that the page's size does not depend on that order.
	sender := func(i int) string { return [...]string{"alice", "brian"}[i%2] }
	body := func(i int) string {
		return fmt.Sprintf("message %04d of the benchmark, a line of ordinary length", i)
	}
	sends := make([]benchAnswer, benchHistoryMessages)
	for i := range sends {
		sends[i] = clients[sender(i)].start(&protocol.Send{Conv: conv, MsgID: fmt.Sprintf("m%04d", i), Body: body(i), ClientTS: 1_700_000_000_000})
	}
	bySeq := map[int64]int{}
	for i, p := range sends {
		bySeq[benchDecode[*protocol.Sent](b, p.wait(b)).Seq] = i
	}
	for seq := int64(2); seq < benchHistoryMessages+2; seq++ {
		if _, ok := bySeq[seq]; !ok {
			b.Fatalf("no message stored at seq %d of 2..%d", seq, benchHistoryMessages+1)
		}
	}

	// The relations on the page's 20 messages: an edit by the sender
	// (the new body as long as the old, so that the page grows by the
	// relations' state only) and the reactions.
	want := make([]protocol.Message, 0, benchPage)
	type relation struct {
		target     int64
		user, body string
		p          benchAnswer
	}
	var rels []relation
	for seq := int64(benchPageAt); seq < benchPageAt+benchPage; seq++ {
		i := bySeq[seq]
		m := protocol.Message{Conv: conv, Seq: seq, MsgID: fmt.Sprintf("m%04d", i), From: sender(i), Body: body(i), ClientTS: 1_700_000_000_000}
		if relations {
			m.Body = strings.Replace(m.Body, "message", "Message", 1)
			rels = append(rels, relation{seq, m.From, m.Body, clients[m.From].start(&protocol.Send{Conv: conv, MsgID: fmt.Sprintf("e%d", seq), Kind: protocol.KindEdit, RefSeq: seq, Body: m.Body, ClientTS: 1_700_000_000_000})})
			for _, r := range benchReactors {
				rels = append(rels, relation{seq, r.user, r.body, clients[r.user].start(&protocol.Send{Conv: conv, MsgID: fmt.Sprintf("r%d-%s", seq, r.user), Kind: protocol.KindReaction, RefSeq: seq, Body: r.body, ClientTS: 1_700_000_000_000})})
			}
		}
		want = append(want, m)
	}
	given := map[int64][]benchReaction{}
	for _, r := range rels {
		sent := benchDecode[*protocol.Sent](b, r.p.wait(b))
		if r.p.kind == protocol.KindEdit {
			want[r.target-benchPageAt].EditedTS = sent.ServerTS
		} else {
			given[r.target] = append(given[r.target], benchReaction{r.user, r.body, sent.Seq})
		}
	}
	for i := range want {
		want[i].SetReactions(benchAggregate(given[want[i].Seq]))
	}

	benchSettle(b, env)

	// The page, as history answers it, checked once in full; every
	// answer after must be the same bytes after its id.
	reader := clients["reader"]
	page := &protocol.History{Conv: conv, BeforeSeq: benchPageAt + benchPage, Limit: benchPage}
	first := reader.request(page)
	got := benchDecode[*protocol.Messages](b, first)
	for i := range got.Messages {
		got.Messages[i].ServerTS = 0 // set by the server; not compared
	}
	for i := range want {
		want[i].ServerTS = 0
	}
	if servertest.JSON(got.Messages) != servertest.JSON(want) || !got.HasMore {
		b.Fatalf("history page:\n got %s\nwant %s", servertest.JSON(got.Messages), servertest.JSON(want))
	}
	_, firstTail := benchSplitID(first)

	return func() []byte {
		page.ID = ""
		answer := reader.request(page)
		if _, tail := benchSplitID(answer); !bytes.Equal(tail, firstTail) {
			b.Fatalf("a later page differs from the first: %s", answer)
		}
		return answer
	}
}

// BenchmarkGroupReactions is a group of 100 members, each online on one
// device; u000 sends a message and then every member, u000 included,
// reacts to it, with one of five reactions. sequential sends the 100
// reactions one after another, concurrent all at once as from 100 phones.
// Every reaction is a stored entry pushed to the 100 devices. It reports
// each reaction's send→sent latency (p50, p99 over every reaction of
// every op) and the size of the target message object in the history
// answer afterwards (object-B; its seq has more digits as ops add
// messages), of which its reactions aggregate, 100 user names of 4
// characters, is reactions-B; one op is one message and its 100
// reactions. The
// messages-* variants are the baseline: each member sends an ordinary
// message instead of its reaction, so that a reaction's latency can be
// told from what any message to that group costs.
func BenchmarkGroupReactions(b *testing.B) {
	b.Run("sequential", func(b *testing.B) { benchGroupReactions(b, false, true) })
	b.Run("concurrent", func(b *testing.B) { benchGroupReactions(b, true, true) })
	b.Run("messages-sequential", func(b *testing.B) { benchGroupReactions(b, false, false) })
	b.Run("messages-concurrent", func(b *testing.B) { benchGroupReactions(b, true, false) })
}

const benchGroupSize = 100

var benchReactionBodies = []string{"👍", "❤️", "😂", "🎉", "👀"}

func benchGroupReactions(b *testing.B, concurrent, reactions bool) {
	env := servertest.Start(b, benchUnlimited)
	users := make([]string, benchGroupSize)
	clients := make([]*benchClient, benchGroupSize)
	for i := range users {
		users[i] = fmt.Sprintf("u%03d", i)
		clients[i] = dialBench(b, env, users[i], "bench")
	}
	g := benchDecode[*protocol.Group](b, clients[0].request(&protocol.CreateGroup{Title: "everyone", Members: users[1:]}))
	if len(g.Members) != benchGroupSize {
		b.Fatalf("group of %d members, want %d", len(g.Members), benchGroupSize)
	}

	var latencies []time.Duration
	var aggregate, reactionsLen int
	for i := 0; b.Loop(); i++ {
		b.StopTimer()
		target := benchDecode[*protocol.Sent](b, clients[0].request(&protocol.Send{Conv: g.Conv, MsgID: fmt.Sprintf("t%d", i), Body: "ship it?", ClientTS: time.Now().UnixMilli()}))
		benchSettle(b, env)
		b.StartTimer()

		given := make([]benchReaction, benchGroupSize)
		took := make([]time.Duration, benchGroupSize)
		react := func(u int) {
			send := &protocol.Send{Conv: g.Conv, MsgID: fmt.Sprintf("r%d-%d", i, u), Kind: protocol.KindReaction, RefSeq: target.Seq,
				Body: benchReactionBodies[u%len(benchReactionBodies)], ClientTS: time.Now().UnixMilli()}
			if !reactions {
				send.Kind, send.RefSeq, send.Body = "", 0, "same here"
			}
			start := time.Now()
			answer := clients[u].request(send)
			took[u] = time.Since(start)
			f, _, perr := protocol.DecodeServerFrame(answer)
			if sent, ok := f.(*protocol.Sent); perr != nil || !ok {
				b.Errorf("%s's reaction: got %s", users[u], answer)
			} else {
				given[u] = benchReaction{users[u], benchReactionBodies[u%len(benchReactionBodies)], sent.Seq}
			}
		}
		if concurrent {
			var wg sync.WaitGroup
			for u := range clients {
				wg.Go(func() { react(u) })
			}
			wg.Wait()
		} else {
			for u := range clients {
				react(u)
			}
		}

		b.StopTimer()
		if b.Failed() {
			b.FailNow()
		}
		latencies = append(latencies, took...)
		object := benchObjectAt(b, clients[1], g.Conv, target.Seq)
		var m protocol.Message
		if err := json.Unmarshal(object, &m); err != nil {
			b.Fatal(err)
		}
		if m.Seq != target.Seq || m.Body != "ship it?" || m.EditedTS != 0 || m.Deleted {
			b.Fatalf("the target after the reactions: %s", object)
		}
		want := benchAggregate(given)
		if !reactions {
			want = nil
		}
		if servertest.JSON(m.ReactionList()) != servertest.JSON(want) {
			b.Fatalf("the target's reactions:\n got %s\nwant %s", servertest.JSON(m.ReactionList()), servertest.JSON(want))
		}
		var raw struct {
			Reactions json.RawMessage `json:"reactions"`
		}
		if err := json.Unmarshal(object, &raw); err != nil {
			b.Fatal(err)
		}
		aggregate, reactionsLen = len(object), len(raw.Reactions)
		b.StartTimer()
	}
	slices.Sort(latencies)
	unit := "reaction"
	if !reactions {
		unit = "message"
	}
	b.ReportMetric(benchPercentile(latencies, 0.50), "p50-us/"+unit)
	b.ReportMetric(benchPercentile(latencies, 0.99), "p99-us/"+unit)
	if reactions {
		b.ReportMetric(float64(aggregate), "object-B")
		b.ReportMetric(float64(reactionsLen), "reactions-B")
	}
}

// benchReaction is a reaction as stored: who gave it, what, at which seq.
type benchReaction struct {
	user, body string
	seq        int64
}

// benchAggregate is the reactions aggregate the contract gives for
// standing reactions rs, one per user: one entry per distinct reaction,
// ordered by its oldest reaction's seq, users in the order of their seqs.
func benchAggregate(rs []benchReaction) []protocol.Reaction {
	rs = slices.Clone(rs)
	slices.SortFunc(rs, func(x, y benchReaction) int { return int(x.seq - y.seq) })
	var out []protocol.Reaction
	for _, r := range rs {
		i := slices.IndexFunc(out, func(e protocol.Reaction) bool { return e.Body == r.body })
		if i < 0 {
			out = append(out, protocol.Reaction{Body: r.body})
			i = len(out) - 1
		}
		out[i].Users = append(out[i].Users, r.user)
	}
	return out
}

// benchObjectAt returns the message object at seq of conv exactly as the
// history answer carries it.
func benchObjectAt(b *testing.B, c *benchClient, conv string, seq int64) []byte {
	b.Helper()
	answer := c.request(&protocol.History{Conv: conv, BeforeSeq: seq + 1, Limit: 1})
	var page struct {
		Type     string            `json:"type"`
		Messages []json.RawMessage `json:"messages"`
	}
	if err := json.Unmarshal(answer, &page); err != nil || page.Type != "messages" || len(page.Messages) != 1 {
		b.Fatalf("history of %s at %d: %s", conv, seq, answer)
	}
	return page.Messages[0]
}

// benchPercentile returns the p-quantile of sorted durations by nearest
// rank (of 100, p99 is the second slowest), in microseconds.
func benchPercentile(sorted []time.Duration, p float64) float64 {
	if len(sorted) == 0 {
		return 0
	}
	i := max(0, int(math.Ceil(p*float64(len(sorted))))-1)
	return float64(sorted[i].Nanoseconds()) / 1e3
}

// benchSettle returns once the rows the server derives and writes behind
// (sessions, pending deliveries) are written, so that what a benchmark
// times does not share the writer with its setup.
func benchSettle(b *testing.B, env *servertest.Env) {
	b.Helper()
	if e, ok := env.Server.Store().(interface{ Barrier(context.Context) error }); ok {
		if err := e.Barrier(b.Context()); err != nil {
			b.Fatalf("barrier: %v", err)
		}
	}
}

// benchUnlimited lifts the per-user frame rate, which a benchmark's one user
// exceeds by design.
func benchUnlimited(c *server.Config) { c.Gateway.RateLimit = rate.Inf }

// benchClient is a WebSocket client as thin as the measurement allows: it
// hands each answer back as the bytes that came on the wire and drops
// every push unread, so that a benchmark times the server and not a
// client's decoding. Its request ids are all 9 characters, so that an
// answer's size does not grow with their count. Its requests may come
// from several goroutines.
type benchClient struct {
	b  *testing.B
	ws *websocket.Conn

	mu      sync.Mutex
	n       int
	waiting map[string]chan []byte
	writeMu sync.Mutex
}

// benchAnswer is a request on its way.
type benchAnswer struct {
	id, kind string
	ch       chan []byte
}

// dialBench connects user/device and says hello.
func dialBench(b *testing.B, env *servertest.Env, user, device string) *benchClient {
	b.Helper()
	ws, _, err := websocket.DefaultDialer.Dial(env.URL, nil)
	if err != nil {
		b.Fatalf("dial: %v", err)
	}
	c := &benchClient{b: b, ws: ws, waiting: map[string]chan []byte{}}
	done := make(chan struct{})
	go c.readLoop(done)
	b.Cleanup(func() {
		ws.Close()
		<-done
	})
	benchDecode[*protocol.Welcome](b, c.request(&protocol.Hello{Protocol: protocol.Version, User: user, Device: device}))
	return c
}

func (c *benchClient) readLoop(done chan struct{}) {
	defer close(done)
	for {
		_, data, err := c.ws.ReadMessage()
		if err != nil {
			return
		}
		id, _ := benchSplitID(data)
		if id == "" {
			continue // a push
		}
		c.mu.Lock()
		ch := c.waiting[id]
		delete(c.waiting, id)
		c.mu.Unlock()
		if ch != nil {
			ch <- data
		}
	}
}

// start writes f with a fresh id and returns its answer to come.
func (c *benchClient) start(f protocol.Frame) benchAnswer {
	c.mu.Lock()
	c.n++
	p := benchAnswer{id: fmt.Sprintf("q%08d", c.n), ch: make(chan []byte, 1)}
	c.waiting[p.id] = p.ch
	c.mu.Unlock()
	if s, ok := f.(*protocol.Send); ok {
		p.kind = s.Kind
	}
	protocol.SetRequestID(f, p.id)
	c.writeMu.Lock()
	err := c.ws.WriteMessage(websocket.TextMessage, protocol.MustEncode(f))
	c.writeMu.Unlock()
	if err != nil {
		c.b.Errorf("write: %v", err)
		close(p.ch)
	}
	return p
}

// wait returns the answer, nil if none came within servertest.Timeout.
func (p benchAnswer) wait(b *testing.B) []byte {
	select {
	case data := <-p.ch:
		return data
	case <-time.After(servertest.Timeout):
		b.Errorf("no answer to %s within %v", p.id, servertest.Timeout)
		return nil
	}
}

// request writes f and returns its answer.
func (c *benchClient) request(f protocol.Frame) []byte { return c.start(f).wait(c.b) }

// benchSplitID returns the id of an answer and what follows it; "" and nil
// for a push. Every frame is encoded {"type":"…","id":"…",… and a push
// has no id.
func benchSplitID(data []byte) (string, []byte) {
	const key = `","id":"`
	i := bytes.Index(data[:min(len(data), 64)], []byte(key))
	if i < 0 {
		return "", nil
	}
	rest := data[i+len(key):]
	end := bytes.IndexByte(rest, '"')
	if end < 0 {
		return "", nil
	}
	return string(rest[:end]), rest[end:]
}

// benchDecode decodes a server frame and requires it to be of type F.
func benchDecode[F protocol.Frame](b *testing.B, data []byte) F {
	b.Helper()
	f, _, perr := protocol.DecodeServerFrame(data)
	typed, ok := f.(F)
	if perr != nil || !ok {
		b.Fatalf("want %T, got %s", typed, data)
	}
	return typed
}
