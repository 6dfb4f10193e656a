// Package faultrun is the fault run: a harness that proves no
// acknowledged message is ever lost or duplicated while the server is
// killed and connections are cut.
//
// A run starts the real imserver binary on a fixed loopback address, puts
// a TCP proxy in front of it, and connects a client (package
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
//   - restarts clients on their stores at random moments.
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
//     an client showed acknowledged, is in the server's history exactly
//     once (by conv and msg_id), with the seq it was acknowledged with;
//     every message handed to an client got there, and nothing else did;
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
// # The cluster run
//
// With Config.Cluster the run is the scaled-out deployment's
// (TestFaultRunCluster): two imserver nodes (-store dynamodb) on tables of
// a fresh prefix in a DynamoDB client (IM_TEST_DYNAMODB, see package
// internal/testservices) and on a redis-server process of the run's own (on
// a free loopback port, without persistence, so that flushing it touches
// nothing else; the run fails when redis-server is not installed), each
// node with its own data directory and a fixed node id. The proxy hands
// each new connection to the next node that is up, round-robin, so a
// client whose node died or left reconnects to another; the probes that
// read the server's view dial the nodes in turn. Besides the cuts and
// the client restarts, the chaos
//
//   - SIGKILLs one node at a time, never two at once, and restarts it
//     after a random downtime on the same address, data directory and
//     node id;
//   - has nodes join and leave: a new node (a new node id, address and
//     data directory) starts and takes its share of the shards, and
//     after a while a random member gets SIGTERM and hands its shards
//     over before it stops, never while a node is down for a kill (so
//     the members are never fewer than at the start, and no more nodes
//     are away at once than a kill takes); the proxy sends the leaving
//     node's clients to the others from that moment, as after a kill. A
//     node that stops at the end of imserver's shutdown grace (15 s,
//     requests in flight still waiting for their shards' owners) is
//     counted as such; one that fails to stop otherwise is a violation;
//   - FLUSHALLs the run's Redis at random moments (the shards' leases,
//     the node set, presence and the sequence counters gone at once), and
//   - has DynamoDB fail: the nodes reach it through a tcpproxy.Proxy
//     that, for a random 0.5 to 3 s, either resets every connection, live
//     or new, or delivers every byte it forwards a random latency late
//     (the two kinds alternate), then recovers. No node is restarted for it; a
//     node that exited on its own fails the run.
//
// The last flush and the last outage come after the last kill, and the
// chaos goes on until every device reconnected after the last flush, so
// that what follows shows recovery without a restart. Verify's checks
// are the same, and say for this run: nothing acknowledged (on the wire,
// which is how a node that answered sent for a write DynamoDB did not
// take would show) is lost or duplicated, no seq was reused or skipped
// across the flushes, sessions and unread counts hold (read back after
// Redis lost its data). Once the run converged, a push round has every
// device send one message with no chaos at all, and the run converges
// again: a device that did not reconnect can only have got the others'
// messages as pushes from either node (a reconnect during the round is a
// push violation). TestFaultRunClusterCatchesLostData deletes the
// cluster's tables and flushes Redis at a kill, and expects lost
// messages: Verify reads what the cluster stored.
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
// (about six minutes on two cores). The cluster run's short form (4
// kills, 100 cuts, 2 flushes, 2 DynamoDB outages, a join and a leave;
// about a minute and a half under -race, half of it the convergence)
// runs with the others when the clients are named (scripts/test.sh does);
// its long form takes the same flags and -flushes, -dynamo-outages,
// -joins (a join and a leave each) and -nodes:
//
//	go test ./faultrun -run 'TestFaultRunCluster$' -v -timeout 60m -args -kills 20 -cuts 1000 -flushes 5 -dynamo-outages 5 -joins 5 -duration 10m
//
// (about three and a half minutes on two cores). -seed sets the seed of
// the harness's random choices (0, the default, picks one and logs it;
// the timing of the processes is not reproducible); -users and
// -two-device-users size the crowd (4 and 2 by default). -logs DIR keeps
// every server's whole log there (a cluster's nodes at debug level), and
// the goroutines of every node when a leave takes longer than 10 s.
package faultrun
