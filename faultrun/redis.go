package faultrun

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os/exec"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// RedisServer is a redis-server process of the run's own, on a free
// loopback port, so that the chaos may FLUSHALL it without touching any
// other Redis. It keeps nothing on disk.
type RedisServer struct {
	addr   string
	cmd    *exec.Cmd
	done   chan struct{}
	logs   *logRing
	client *redis.Client
}

// StartRedis starts redis-server (bin; "" looks it up on PATH) and
// returns once it answers PING.
func StartRedis(ctx context.Context, bin string) (*RedisServer, error) {
	if bin == "" {
		var err error
		if bin, err = exec.LookPath("redis-server"); err != nil {
			return nil, errors.New("redis-server is not installed (scripts/test.sh installs it: apt-get install redis-server)")
		}
	}
	addr, err := FreeLoopbackAddr()
	if err != nil {
		return nil, err
	}
	_, port, _ := net.SplitHostPort(addr)
	s := &RedisServer{addr: addr, done: make(chan struct{}), logs: newLogRing(50)}
	s.cmd = exec.Command(bin, "--port", port, "--bind", "127.0.0.1", "--save", "", "--appendonly", "no")
	s.cmd.Stdout, s.cmd.Stderr = s.logs, s.logs
	if err := s.cmd.Start(); err != nil {
		return nil, fmt.Errorf("start redis-server: %w", err)
	}
	go func() {
		s.cmd.Wait()
		close(s.done)
	}()
	s.client = redis.NewClient(&redis.Options{Addr: addr})
	err = waitUntil(startTimeout, "redis-server answering PING", func() (string, error) {
		select {
		case <-s.done:
			return "", fmt.Errorf("redis-server exited: %v\n%s", s.cmd.ProcessState, s.logs)
		default:
		}
		if err := s.client.Ping(ctx).Err(); err != nil {
			return err.Error(), nil
		}
		return "", nil
	})
	if err != nil {
		s.Stop()
		return nil, err
	}
	return s, nil
}

// URL returns the redis:// URL of database 0.
func (s *RedisServer) URL() string { return "redis://" + s.addr + "/0" }

// FlushAll empties every database: the shards' leases, the node set,
// presence and the sequence counters.
func (s *RedisServer) FlushAll(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := s.client.FlushAll(ctx).Err(); err != nil {
		return fmt.Errorf("FLUSHALL: %w", err)
	}
	return nil
}

// Alive reports whether the process still runs.
func (s *RedisServer) Alive() bool {
	select {
	case <-s.done:
		return false
	default:
		return true
	}
}

// Stop kills the process and waits for it.
func (s *RedisServer) Stop() {
	s.client.Close()
	s.cmd.Process.Kill()
	<-s.done
}

// Write lets a logRing collect a process's output, line by line.
func (r *logRing) Write(p []byte) (int, error) {
	for _, line := range strings.Split(strings.TrimRight(string(p), "\n"), "\n") {
		r.add(line)
	}
	return len(p), nil
}
