package main

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"time"

	"github.com/imcore/im/protocol"
)

// setupDM connects -pairs pairs: a<i> sends to b<i> in their direct chat.
func setupDM(ctx context.Context, cfg *Config, errs *errorLog) ([]*convState, []*conn, error) {
	ws := make([]who, 0, 2*cfg.Pairs)
	for i := range cfg.Pairs {
		n := strconv.Itoa(i)
		ws = append(ws, who{cfg.user("a" + n), "bench"}, who{cfg.user("b" + n), "bench"})
	}
	conns, _, err := dialAll(ctx, cfg, errs, newDialer(4096), ws)
	if err != nil {
		return nil, nil, err
	}
	convs := make([]*convState, cfg.Pairs)
	for i := range convs {
		snd, rcv := conns[2*i], conns[2*i+1]
		conv, ok := protocol.DirectConv(snd.user, rcv.user)
		if !ok {
			closeAll(conns)
			return nil, nil, fmt.Errorf("no direct chat between %s and %s", snd.user, rcv.user)
		}
		convs[i] = &convState{conv: conv, snd: snd, rcvs: []*recipient{{c: rcv}}}
	}
	return convs, conns, nil
}

// setupGroups connects -groups groups of -group-size members; member 0
// creates its group (every member is online, so the creation's system
// message is pushed to them and acknowledged like any other) and sends.
func setupGroups(ctx context.Context, cfg *Config, errs *errorLog) ([]*convState, []*conn, error) {
	ws := make([]who, 0, cfg.Groups*cfg.GroupSize)
	for g := range cfg.Groups {
		for m := range cfg.GroupSize {
			ws = append(ws, who{cfg.user(fmt.Sprintf("g%d-m%d", g, m)), "bench"})
		}
	}
	conns, _, err := dialAll(ctx, cfg, errs, newDialer(4096), ws)
	if err != nil {
		return nil, nil, err
	}
	convs := make([]*convState, cfg.Groups)
	for g := range convs {
		members := conns[g*cfg.GroupSize : (g+1)*cfg.GroupSize]
		creator := members[0]
		create := &protocol.CreateGroup{Title: fmt.Sprintf("bench %d", g), Key: "bench"}
		for _, m := range members[1:] {
			create.Members = append(create.Members, m.user)
		}
		data, _, err := creator.roundTrip(ctx, create)
		var f protocol.Frame
		if err == nil {
			f, err = decode(data)
		}
		group, ok := f.(*protocol.Group)
		if err == nil && !ok {
			err = fmt.Errorf("create_group answered %s", f.FrameType())
		}
		if err != nil {
			closeAll(conns)
			return nil, nil, fmt.Errorf("creating group %d: %w", g, err)
		}
		cs := &convState{conv: group.Conv, snd: creator}
		for _, m := range members[1:] {
			cs.rcvs = append(cs.rcvs, &recipient{c: m})
		}
		convs[g] = cs
	}
	return convs, conns, nil
}

// runConvLoad runs dm or group.
func runConvLoad(ctx context.Context, cfg *Config, errs *errorLog, r *Report, progress func(string, ...any)) error {
	setup := setupDM
	if cfg.Workload == "dm" {
		r.Params.set("pairs", cfg.Pairs)
	} else {
		setup = setupGroups
		r.Params.set("groups", cfg.Groups)
		r.Params.set("group_size", cfg.GroupSize)
	}
	if cfg.Rate > 0 {
		r.Params.set("loop", "open")
		r.Params.set("rate", cfg.Rate)
	} else {
		r.Params.set("loop", "closed")
		r.Params.set("window", cfg.Window)
	}
	r.Params.set("ack", cfg.Ack)
	r.Params.set("mark_ids", cfg.MarkIDs)
	r.Params.set("body", cfg.BodyBytes)
	r.Params.set("warmup_s", cfg.Warmup.Seconds())
	r.Params.set("duration_s", cfg.Duration.Seconds())
	r.Params.set("count", cfg.Count)

	progress("connecting")
	setupCtx, cancel := context.WithTimeout(ctx, cfg.SetupTimeout)
	convs, conns, err := setup(setupCtx, cfg, errs)
	cancel()
	if err != nil {
		return err
	}
	defer closeAll(conns)
	l := newConvLoad(cfg, errs, convs)
	for _, c := range conns {
		c.start()
	}
	if cfg.StartFile != "" {
		progress("connected; waiting for %s", cfg.StartFile)
		if err := awaitFile(ctx, cfg.StartFile, cfg.SetupTimeout); err != nil {
			return err
		}
	}
	m := newMeter(cfg.PID)
	progress("sending for %v (warm-up %v)", cfg.Duration, cfg.Warmup)
	l.run(ctx, m.begin, m.end)
	l.report(r)
	m.report(r)
	if p := r.ServerProc; p != nil {
		if read, _ := r.Rates.get("read_per_s"); read > 0 {
			r.Values.set("server_cpu_us_per_read", round(p.CPUPct/100*1e6/read, 1))
		}
	}
	return nil
}

// awaitFile returns once path exists, or an error after within.
func awaitFile(ctx context.Context, path string, within time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, within)
	defer cancel()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		if _, err := os.Stat(path); err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("-start-file %s did not appear within %v", path, within)
		case <-tick.C:
		}
	}
}
