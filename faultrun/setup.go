package faultrun

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/imcore/im/client"
	"github.com/imcore/im/internal/tcpproxy"
	"github.com/imcore/im/localstore"
	"github.com/imcore/im/protocol"
)

// setup starts the server (or the cluster), the proxy and the devices,
// and creates the groups.
func (r *run) setup(ctx context.Context) error {
	if r.cfg.LogDir != "" {
		if err := os.MkdirAll(r.cfg.LogDir, 0o700); err != nil {
			return err
		}
	}
	var err error
	if r.cfg.Cluster != nil {
		err = r.setupCluster(ctx)
	} else {
		err = r.setupServer()
	}
	if err != nil {
		return err
	}
	r.proxy, err = tcpproxy.Start(tcpproxy.Config{Targets: r.upAddrs, Cuts: r.cfg.Policy, Seed: r.cfg.Seed, Tap: r.led.TapServerMessage})
	if err != nil {
		return err
	}
	url := "ws://" + r.proxy.Addr() + "/ws"
	profiles := filepath.Join(r.cfg.Dir, "profiles")
	if err := os.MkdirAll(profiles, 0o700); err != nil {
		return err
	}
	r.users = userNames[:r.cfg.Users]
	for i, user := range r.users {
		n := 1
		if i < r.cfg.TwoDeviceUsers {
			n = 2
		}
		for k := 1; k <= n; k++ {
			d, err := OpenDevice(profiles, user, fmt.Sprintf("%s-%d", user, k), url, r.led, r.harnessError)
			if err != nil {
				return err
			}
			r.devices = append(r.devices, d)
		}
	}
	if err := waitUntil(setupWait, "every device online", func() (string, error) {
		return r.offline(), nil
	}); err != nil {
		return err
	}
	return r.createGroups()
}

// setupServer starts the single embedded server.
func (r *run) setupServer() error {
	addr, err := FreeLoopbackAddr()
	if err != nil {
		return err
	}
	dataDir := filepath.Join(r.cfg.Dir, "server")
	if err := os.MkdirAll(dataDir, 0o700); err != nil {
		return err
	}
	server := NewServer(r.cfg.ServerBinary, addr, dataDir)
	server.logPath = r.logPath("server")
	if err := server.Run(); err != nil {
		return err
	}
	r.addNode(server)
	return nil
}

// logPath returns the path of the log file of the server named name, ""
// without a LogDir.
func (r *run) logPath(name string) string {
	if r.cfg.LogDir == "" {
		return ""
	}
	return filepath.Join(r.cfg.LogDir, name+".log")
}

// offline names a device that is not online, "" when all are.
func (r *run) offline() string {
	for _, d := range r.devices {
		if !r.led.Online(d.Name) {
			return d.Name + " is offline"
		}
	}
	return ""
}

// createGroups makes the conversations: a direct chat between every two
// users, a group of everyone and, with four users or more, a group of
// three of them created by another user. Groups are created through the
// clients, before the chaos.
func (r *run) createGroups() error {
	r.members = make(map[string][]string)
	for i, a := range r.users {
		for _, b := range r.users[i+1:] {
			conv, _ := protocol.DirectConv(a, b)
			r.members[conv] = directMembers(conv)
		}
	}
	type plan struct {
		creator *Device
		title   string
		members []string
	}
	plans := []plan{{r.devices[0], "everyone", r.users[1:]}}
	if len(r.users) >= 4 {
		creator := r.deviceOf(r.users[1])
		plans = append(plans, plan{creator, "trio", []string{r.users[2], r.users[3]}})
	}
	for _, p := range plans {
		err := p.creator.use(func(eng *client.Client, _ *localstore.Store) error {
			eng.CreateGroup("", p.title, p.members)
			return nil
		})
		if err != nil {
			return err
		}
		select {
		case g := <-p.creator.groups:
			members := slices.Clone(g.Members)
			slices.Sort(members)
			r.members[g.Conv] = members
		case <-time.After(setupWait):
			return fmt.Errorf("group %q not created within %v", p.title, setupWait)
		}
	}
	for _, d := range r.devices {
		d.convs = nil
		for _, conv := range sortedKeys(r.members) {
			if slices.Contains(r.members[conv], d.User) {
				d.convs = append(d.convs, conv)
			}
		}
	}
	return nil
}

// deviceOf returns user's first device.
func (r *run) deviceOf(user string) *Device {
	for _, d := range r.devices {
		if d.User == user {
			return d
		}
	}
	return nil
}

// teardown stops everything the run started.
func (r *run) teardown() {
	for _, d := range r.devices {
		d.Close()
	}
	if r.proxy != nil {
		r.proxy.Close()
	}
	for _, s := range r.everyNode() {
		s.Kill()
	}
	if r.cluster != nil {
		r.teardownCluster()
	}
}
