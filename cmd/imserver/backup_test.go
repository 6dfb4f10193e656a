package main

import (
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/imcore/im/protocol"
)

// A backup taken while senders write restores to a server that serves
// every message acknowledged before the backup began, with the same seq,
// in gap-free conversations.
func TestBackupUnderLoadRestores(t *testing.T) {
	dir := t.TempDir()
	p := startServer(t, "-data", dir)
	convs := []string{"d:alice:bob", "d:alice:carol", "d:bob:carol"}
	var (
		mu     sync.Mutex
		acks   []acked
		before []acked // acknowledged before the backup began
		wg     sync.WaitGroup
		stop   = make(chan struct{})
	)
	for i := range 6 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cl, conv := dialLoadSender(t, p.addr, convs, i)
			defer cl.ws.Close()
			for j := 0; ; j++ {
				select {
				case <-stop:
					return
				default:
				}
				id := fmt.Sprintf("s%d-%d", i, j)
				a, err := cl.sendLoad(conv, id)
				if err != nil {
					t.Errorf("send under load: %v", err)
					return
				}
				mu.Lock()
				acks = append(acks, a)
				mu.Unlock()
			}
		}()
	}
	// Let the load run, then back up in its middle.
	deadline := time.Now().Add(30 * time.Second)
	for {
		mu.Lock()
		n := len(acks)
		mu.Unlock()
		if n >= 300 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("only %d sends in 30 s", n)
		}
		time.Sleep(10 * time.Millisecond)
	}
	backup := filepath.Join(t.TempDir(), "im-backup.db")
	mu.Lock()
	before = append([]acked(nil), acks...)
	mu.Unlock()
	out, errOut, code := runCommand(t, nil, "backup", "-data", dir, backup)
	if code != 0 {
		t.Fatalf("backup: %s", errOut)
	}
	time.Sleep(200 * time.Millisecond) // more load after the backup
	close(stop)
	wg.Wait()
	t.Logf("%s; %d sends acknowledged before it began, %d in all", strings.TrimSpace(out), len(before), len(acks))
	if err := p.stop(t, syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}

	restored := t.TempDir()
	if out, errOut, code := runCommand(t, nil, "restore", "-data", restored, backup); code != 0 || !strings.Contains(out, "restored") {
		t.Fatalf("restore: exit %d, %q %q", code, out, errOut)
	}
	p2 := startServer(t, "-data", restored)
	stored := map[string]map[string]protocol.Message{}
	for _, conv := range convs {
		c, _ := protocol.ParseConv(conv)
		cl := dialHello(t, p2.addr, c.A, "checker")
		stored[conv], _ = readHistory(t, cl, conv)
		cl.ws.Close()
	}
	for _, a := range before {
		m, ok := stored[a.conv][a.msgID]
		if !ok {
			t.Fatalf("%s, acknowledged before the backup, is not in the restored database", a.msgID)
		}
		if m.Seq != a.seq || m.ServerTS != a.ts {
			t.Fatalf("%s: restored seq %d ts %d, acknowledged seq %d ts %d", a.msgID, m.Seq, m.ServerTS, a.seq, a.ts)
		}
	}
}
