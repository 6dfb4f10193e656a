// Package hub keeps the registry of online devices in this process and
// pushes frames to them. It never blocks a caller on a slow device: a
// device's Deliver is non-blocking by contract.
package hub

import "sync"

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
	// Deliver queues p without blocking. It returns false when the device
	// cannot take it (its queue is full or it is closing); the device then
	// disconnects itself.
	Deliver(p Push) bool
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

// Push delivers p to every device of user except skip (nil skips none) and
// returns how many took it.
func (h *Hub) Push(user string, p Push, skip Device) int {
	h.mu.RLock()
	defer h.mu.RUnlock()
	n := 0
	for d := range h.users[user] {
		if d != skip && d.Deliver(p) {
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
