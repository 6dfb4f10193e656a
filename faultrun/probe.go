package faultrun

import (
	"fmt"
	"strconv"
	"time"

	"github.com/gorilla/websocket"

	"github.com/imcore/im/protocol"
)

// probeWait bounds one request of a probe.
const probeWait = 20 * time.Second

// probeDevice is the device id probes say hello with.
const probeDevice = "faultrun-probe"

// probe is a raw protocol connection straight to the server (not through
// the proxy) that reads the server's view: history, receipts, sessions.
// It never writes anything that changes state: no send, no mark, no
// session operation.
type probe struct {
	ws  *websocket.Conn
	ids int
}

// dialProbe connects to the server at addr as user.
func dialProbe(addr, user string) (*probe, error) {
	ws, _, err := websocket.DefaultDialer.Dial("ws://"+addr+"/ws", nil)
	if err != nil {
		return nil, fmt.Errorf("probe dial: %w", err)
	}
	p := &probe{ws: ws}
	if _, err := p.request(&protocol.Hello{Protocol: protocol.Version, User: user, Device: probeDevice}); err != nil {
		ws.Close()
		return nil, fmt.Errorf("probe hello as %s: %w", user, err)
	}
	return p, nil
}

func (p *probe) close() { p.ws.Close() }

// request writes f with a fresh id and returns its answer, skipping the
// pushes that come meanwhile; an error frame is an error.
func (p *probe) request(f protocol.Frame) (protocol.Frame, error) {
	p.ids++
	id := "p" + strconv.Itoa(p.ids)
	protocol.SetRequestID(f, id)
	p.ws.SetWriteDeadline(time.Now().Add(probeWait))
	if err := p.ws.WriteMessage(websocket.TextMessage, protocol.MustEncode(f)); err != nil {
		return nil, err
	}
	p.ws.SetReadDeadline(time.Now().Add(probeWait))
	for {
		_, data, err := p.ws.ReadMessage()
		if err != nil {
			return nil, err
		}
		g, gotID, perr := protocol.DecodeServerFrame(data)
		if perr != nil {
			return nil, perr
		}
		if gotID != id {
			continue
		}
		if e, ok := g.(*protocol.ErrorFrame); ok {
			return nil, fmt.Errorf("%s answered %s: %s", f.FrameType(), e.Code, e.Message)
		}
		return g, nil
	}
}

// history returns every message of conv the user may read, in seq order,
// page after page.
func (p *probe) history(conv string) ([]protocol.Message, error) {
	var out []protocol.Message
	after := int64(0)
	for {
		a := after
		f, err := p.request(&protocol.History{Conv: conv, AfterSeq: &a, Limit: protocol.MaxHistoryLimit})
		if err != nil {
			return nil, err
		}
		page, ok := f.(*protocol.Messages)
		if !ok {
			return nil, fmt.Errorf("history answered %s", f.FrameType())
		}
		out = append(out, page.Messages...)
		if len(page.Messages) > 0 {
			after = page.Messages[len(page.Messages)-1].Seq
		}
		if !page.HasMore || len(page.Messages) == 0 {
			return out, nil
		}
	}
}

// newest returns the seq of conv's newest message (0 for none).
func (p *probe) newest(conv string) (int64, error) {
	f, err := p.request(&protocol.History{Conv: conv, Limit: 1})
	if err != nil {
		return 0, err
	}
	page, ok := f.(*protocol.Messages)
	if !ok {
		return 0, fmt.Errorf("history answered %s", f.FrameType())
	}
	if len(page.Messages) == 0 {
		return 0, nil
	}
	return page.Messages[len(page.Messages)-1].Seq, nil
}

// receipts returns every member's boundaries in conv.
func (p *probe) receipts(conv string) ([]protocol.MemberReceipt, error) {
	f, err := p.request(&protocol.ReceiptsRequest{Conv: conv})
	if err != nil {
		return nil, err
	}
	r, ok := f.(*protocol.ReceiptsReply)
	if !ok {
		return nil, fmt.Errorf("receipts answered %s", f.FrameType())
	}
	return r.Members, nil
}

// sessions returns the user's whole main list (a full sync, page after
// page) and its total unread count.
func (p *probe) sessions() ([]protocol.Session, int64, error) {
	var out []protocol.Session
	since := int64(0)
	for {
		f, err := p.request(&protocol.Sync{Since: since, Limit: 1000})
		if err != nil {
			return nil, 0, err
		}
		page, ok := f.(*protocol.Sessions)
		if !ok {
			return nil, 0, fmt.Errorf("sync answered %s", f.FrameType())
		}
		out = append(out, page.Sessions...)
		since = page.Cursor
		if !page.HasMore {
			return out, page.TotalUnread, nil
		}
	}
}
