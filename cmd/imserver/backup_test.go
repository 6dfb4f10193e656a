package main

import (
	"path/filepath"
	"strings"
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
	l := startLoad(t, p.addr, convs, 6, func(err error) { t.Errorf("send under load: %v", err) })
	// Let the load run, then back up in its middle.
	if !l.await(300, 30*time.Second) {
		t.Fatalf("only %d sends in 30 s", len(l.acknowledged()))
	}
	backup := filepath.Join(t.TempDir(), "im-backup.db")
	before := l.acknowledged() // acknowledged before the backup began
	out, errOut, code := runCommand(t, nil, "backup", "-data", dir, backup)
	if code != 0 {
		t.Fatalf("backup: %s", errOut)
	}
	// More load after the backup.
	if n := len(l.acknowledged()) + 50; !l.await(n, 30*time.Second) {
		t.Fatalf("only %d of %d sends in 30 s after the backup", len(l.acknowledged()), n)
	}
	l.end()
	t.Logf("%s; %d sends acknowledged before it began, %d in all", strings.TrimSpace(out), len(before), len(l.acknowledged()))
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
