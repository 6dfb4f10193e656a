// Package hub keeps the registry of online devices in this process and
// pushes frames to them. It never blocks a caller on a slow device: a
// device's Deliver is non-blocking by contract.
package hub

import (
	"encoding/json"
	"sync"
)

// Push is one frame on its way to a device. Conv and Seq name the message
// of a msg push (empty for other frames), so that a device can keep each
// conversation in seq order and drop a message it already has.
type Push struct {
	Frame []byte
	Conv  string
	Seq   int64
}

// Device is one connected device of a user.
type Device interface {
	// User is the authenticated user the device belongs to.
	User() string
	// Name is the device's name as its hello gave it.
	Name() string
	// Deliver queues p without blocking. It returns false when the device
	// cannot take it (its queue is full or it is closing); the device then
	// disconnects itself.
	Deliver(p Push) bool
}

// Elsewhere stands for a device connected to another node, on whose
// behalf this one serves a request: a push to its user skips it there,
// where it is connected, and nowhere else. It takes no push itself.
type Elsewhere struct {
	UserID, DeviceName, Node string
}

// User implements Device.
func (e Elsewhere) User() string { return e.UserID }

// Name implements Device.
func (e Elsewhere) Name() string { return e.DeviceName }

// Deliver implements Device: nothing reaches it from here.
func (Elsewhere) Deliver(Push) bool { return false }

// Named stands for the devices of a user named Name, on this node: the
// skip of a push another node sends here on behalf of one of them.
type Named string

// User implements Device.
func (Named) User() string { return "" }

// Name implements Device.
func (n Named) Name() string { return string(n) }

// Deliver implements Device.
func (Named) Deliver(Push) bool { return false }

// skips reports whether a push that skips skip leaves d out.
func skips(skip, d Device) bool {
	if n, ok := skip.(Named); ok {
		return n != "" && d.Name() == string(n)
	}
	return d == skip
}

// Delivery is a push on its way to the devices of User on another node,
// but those named Skip (the device that sent what it tells of): how pushes
// travel between nodes.
type Delivery struct {
	User  string          `json:"user"`
	Skip  string          `json:"skip,omitempty"`
	Conv  string          `json:"conv,omitempty"`
	Seq   int64           `json:"seq,omitempty"`
	Frame json.RawMessage `json:"frame"`
}

// Deliver pushes d to this hub's devices of its user.
func (h *Hub) Deliver(d Delivery) int {
	return h.Push(d.User, Push{Frame: d.Frame, Conv: d.Conv, Seq: d.Seq}, Named(d.Skip))
}

// Hub is the in-process registry of online devices.
type Hub struct {
	mu    sync.RWMutex
	users map[string]map[Device]struct{}
}

// New returns an empty hub.
func New() *Hub {
	return &Hub{users: make(map[string]map[Device]struct{})}
}

// Register makes d reachable by pushes to its user.
func (h *Hub) Register(d Device) {
	h.mu.Lock()
	defer h.mu.Unlock()
	devices := h.users[d.User()]
	if devices == nil {
		devices = make(map[Device]struct{})
		h.users[d.User()] = devices
	}
	devices[d] = struct{}{}
}

// Unregister removes d. Once it returns, no push reaches d any more, so the
// device can settle what it was pushed.
func (h *Hub) Unregister(d Device) {
	h.mu.Lock()
	defer h.mu.Unlock()
	devices := h.users[d.User()]
	delete(devices, d)
	if len(devices) == 0 {
		delete(h.users, d.User())
	}
}

// Push delivers p to every device of user except skip (nil skips none; a
// Named skips the user's devices of that name) and returns how many took
// it.
func (h *Hub) Push(user string, p Push, skip Device) int {
	h.mu.RLock()
	defer h.mu.RUnlock()
	n := 0
	for d := range h.users[user] {
		if (skip == nil || !skips(skip, d)) && d.Deliver(p) {
			n++
		}
	}
	return n
}

// Devices returns every registered device, for shutdown.
func (h *Hub) Devices() []Device {
	h.mu.RLock()
	defer h.mu.RUnlock()
	var out []Device
	for _, devices := range h.users {
		for d := range devices {
			out = append(out, d)
		}
	}
	return out
}

// DevicesOf returns the registered devices of user.
func (h *Hub) DevicesOf(user string) []Device {
	h.mu.RLock()
	defer h.mu.RUnlock()
	out := make([]Device, 0, len(h.users[user]))
	for d := range h.users[user] {
		out = append(out, d)
	}
	return out
}

// Count returns the number of registered devices.
func (h *Hub) Count() int {
	h.mu.RLock()
	defer h.mu.RUnlock()
	n := 0
	for _, devices := range h.users {
		n += len(devices)
	}
	return n
}
