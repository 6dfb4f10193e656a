package server

import (
	"context"
	"log/slog"
)

// NodeAttr is the key under which every log line of a node names it.
const NodeAttr = "node"

// WithNode returns a logger whose every line carries node=id, so that
// the lines of several nodes merged in one place say which node wrote
// them. The attribute comes last on the line, leaving the start of every
// line as it was (what reads "msg=listening addr=..." still does). A
// component that names its node itself (the relay does) keeps its
// node=id where it puts it, and the line does not repeat it; a node
// attribute with another value is kept as well. An empty id returns l
// unchanged.
func WithNode(l *slog.Logger, id string) *slog.Logger {
	if id == "" {
		return l
	}
	return slog.New(nodeHandler{inner: l.Handler(), node: id})
}

// nodeHandler adds node=node to every record that does not carry it yet.
type nodeHandler struct {
	inner    slog.Handler
	node     string
	attached bool // inner already carries node=node
}

func (h nodeHandler) Enabled(ctx context.Context, level slog.Level) bool {
	return h.inner.Enabled(ctx, level)
}

func (h nodeHandler) Handle(ctx context.Context, r slog.Record) error {
	if !h.attached && !h.carries(r) {
		r = r.Clone()
		r.AddAttrs(slog.String(NodeAttr, h.node))
	}
	return h.inner.Handle(ctx, r)
}

func (h nodeHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	kept := make([]slog.Attr, 0, len(attrs))
	attached := h.attached
	for _, a := range attrs {
		if h.isNode(a) {
			if attached {
				continue // named already: not twice
			}
			attached = true
		}
		kept = append(kept, a)
	}
	if len(kept) == 0 {
		return h
	}
	return nodeHandler{inner: h.inner.WithAttrs(kept), node: h.node, attached: attached}
}

// WithGroup names the node before the group opens: within it, a node
// attribute added at Handle would be the group's.
func (h nodeHandler) WithGroup(name string) slog.Handler {
	if name == "" {
		return h
	}
	inner := h.inner
	if !h.attached {
		inner = inner.WithAttrs([]slog.Attr{slog.String(NodeAttr, h.node)})
	}
	return nodeHandler{inner: inner.WithGroup(name), node: h.node, attached: true}
}

// isNode reports whether a is node=h.node.
func (h nodeHandler) isNode(a slog.Attr) bool {
	return a.Key == NodeAttr && a.Value.Kind() == slog.KindString && a.Value.String() == h.node
}

// carries reports whether r has node=h.node among its own attributes.
func (h nodeHandler) carries(r slog.Record) bool {
	found := false
	r.Attrs(func(a slog.Attr) bool {
		found = h.isNode(a)
		return !found
	})
	return found
}
