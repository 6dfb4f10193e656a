package server

import (
	"context"
	"log/slog"
)

// NodeAttr is the key under which every log line of a node names it.
const NodeAttr = "node"

// WithNode returns a logger whose every line carries node=id, first among
// its attributes, so that the lines of several nodes merged in one place
// say which node wrote them. An attribute node=id added again further
// down (a component that names its node itself, as the relay does) is
// dropped rather than repeated; a node attribute with another value is
// kept. An empty id returns l unchanged.
func WithNode(l *slog.Logger, id string) *slog.Logger {
	if id == "" {
		return l
	}
	return slog.New(nodeHandler{inner: l.Handler().WithAttrs([]slog.Attr{slog.String(NodeAttr, id)}), node: id})
}

// nodeHandler is a handler that already carries node=node at its top
// level, and drops repeats of it there.
type nodeHandler struct {
	inner   slog.Handler
	node    string
	grouped bool // inside a group, a node attribute is another thing
}

func (h nodeHandler) Enabled(ctx context.Context, level slog.Level) bool {
	return h.inner.Enabled(ctx, level)
}

func (h nodeHandler) Handle(ctx context.Context, r slog.Record) error {
	if h.grouped || !h.repeats(r) {
		return h.inner.Handle(ctx, r)
	}
	out := slog.NewRecord(r.Time, r.Level, r.Message, r.PC)
	r.Attrs(func(a slog.Attr) bool {
		if !h.isNode(a) {
			out.AddAttrs(a)
		}
		return true
	})
	return h.inner.Handle(ctx, out)
}

func (h nodeHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	if !h.grouped {
		kept := attrs[:0:0]
		for _, a := range attrs {
			if !h.isNode(a) {
				kept = append(kept, a)
			}
		}
		attrs = kept
	}
	if len(attrs) == 0 {
		return h
	}
	return nodeHandler{inner: h.inner.WithAttrs(attrs), node: h.node, grouped: h.grouped}
}

func (h nodeHandler) WithGroup(name string) slog.Handler {
	if name == "" {
		return h
	}
	return nodeHandler{inner: h.inner.WithGroup(name), node: h.node, grouped: true}
}

// isNode reports whether a is node=h.node.
func (h nodeHandler) isNode(a slog.Attr) bool {
	return a.Key == NodeAttr && a.Value.Kind() == slog.KindString && a.Value.String() == h.node
}

// repeats reports whether r carries node=h.node among its own attributes.
func (h nodeHandler) repeats(r slog.Record) bool {
	found := false
	r.Attrs(func(a slog.Attr) bool {
		found = h.isNode(a)
		return !found
	})
	return found
}
