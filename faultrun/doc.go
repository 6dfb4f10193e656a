// Package faultrun is the fault run: a harness that proves no
// acknowledged message is ever lost or duplicated while the server is
// killed and connections are cut.
//
// A run starts the real imserver binary on a fixed loopback address, puts
// a TCP proxy in front of it, and connects a client engine (package
// client, each with its own localstore database on disk) per device
// through the proxy: several users, some with two devices, in a direct
// chat between every two users and in two groups. Every device sends,
// reads, scrolls back, pins and mutes at random while the run
//
//   - SIGKILLs the server at random moments and restarts it on the same
//     address and data directory,
//   - has the proxy cut connections: after a random number of bytes in
//     either direction (so most cuts leave the peer a partial WebSocket
//     frame, counted as mid-frame cuts), inside the HTTP upgrade, and at
//     random times (some with a TCP reset), and
//   - restarts client engines on their stores at random moments.
//
// The proxy follows the WebSocket framing of both directions, which is how
// it knows a cut fell mid-frame, and taps every sent answer the server
// writes, whether or not it reaches the client.
//
// Once the kill and cut targets are met (or the time bound has passed)
// the chaos stops, and the run waits, on observable conditions and within
// a bound, for every client to catch up. Then Verify checks:
//
//   - every message whose sent answer the server wrote, and every message
//     an engine showed acknowledged, is in the server's history exactly
//     once (by conv and msg_id), with the seq it was acknowledged with;
//     every message handed to an engine got there, and nothing else did;
//   - each conversation's seqs run from 1 without a gap;
//   - every device of every member holds each message exactly once, under
//     its seq, with nothing left in its outbox;
//   - per user and conversation, read <= delivered <= newest seq, and
//     delivered reached the newest seq;
//   - each session's counters: write_seq, last_msg, read_seq (the user's
//     read boundary), unread_count (messages from others above read_seq),
//     ticks (the members' minimum), and total_unread (the sum over the
//     sessions neither muted nor deleted); every device's stored sessions
//     agree with the server's.
//
// It ends with a one-paragraph summary: kills, cuts, mid-frame cuts,
// messages sent and acknowledged, durations and the number of
// violations. Verify's tests break each invariant once, and
// TestFaultRunCatchesAServerThatLosesItsData runs the whole harness
// against a server whose data is wiped at a kill: the checks can fail.
//
// # Running it
//
// The short form is what go test runs (and so scripts/test.sh): 5 kills
// and 200 cuts, about half a minute under -race:
//
//	go test -race ./faultrun
//
// The long form sets the targets and the time bound with flags; it runs
// until both targets are met, or fails when the bound passes first:
//
//	go test ./faultrun -run 'TestFaultRun$' -v -timeout 60m -args -kills 100 -cuts 10000 -duration 30m -users 6 -two-device-users 3
//
// (about six minutes on two cores). -seed sets the seed of the harness's
// random choices (0, the default, picks one and logs it; the timing of the
// processes is not reproducible); -users and -two-device-users size the
// crowd (4 and 2 by default).
package faultrun
