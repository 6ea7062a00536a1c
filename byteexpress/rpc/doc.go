// Package rpc models the Archon-side recovery policies that sit above
// ByteExpress (paper §7.1–7.2): request and connection timeouts,
// probabilistic retry, replica selection across mini-pods, the recovery
// ladder (path change → another replica → TCP fallback) and the quarantine
// (exclusion list) of destinations with repeated failures.
//
// Everything here is a driven, thread-unsafe state machine with explicit
// time: instants are time.Duration since an arbitrary origin, exactly like
// the core's byteexpress.Clock. There are no goroutines, no timers and no
// I/O: the caller asks NextDeadline (byteexpress.Never when nothing is
// pending) and calls Tick(now) at or after it, and feeds events
// (OnConnectFailed, OnRequestTimeout, OnEngineError, OnSuccess, OnProbe).
// The same code therefore runs unchanged under the simulator and on hardware.
// Randomness (the retry coin) comes only from an injected *rand.Rand, so runs
// are deterministic for a fixed seed.
//
// Values from the paper, used as defaults (DefaultConfig):
//   - connection timeout Tc = 10 ms, request timeout Tr = 40 ms (§7.2);
//   - a destination with more than M = 30 connection failures or more than
//     N = 50 request failures inside a 5-minute window is placed on the
//     exclusion list (§7.2).
//
// The paper does not give the retry probability, the attempt limit, the
// number of path changes tried before moving to another replica, how a
// node leaves the exclusion list, or how TCP-fallback destinations return to
// RDMA; the defaults below (RetryProb 0.5, MaxAttempts 3, PathTries 2,
// release by sliding window, 30 s probe interval) are this package's choices.
//
// Quarantine release: a node is excluded while its failure count in the
// sliding window exceeds the limit, so it is released automatically as soon
// as old failures slide out of the window and the count falls back to the
// limit. Config.QuarantineHold, if non-zero, additionally keeps a node
// excluded for at least that long after its latest trip (the paper says
// engineers investigate the node offline; a hold models that). Memory is
// bounded: per node only the last M+1 connection-failure and N+1
// request-failure timestamps are kept (a ring), which is exactly what the
// "more than M in the window" test needs, and Tick forgets nodes that are
// not excluded and have no failure left in the window.
//
// Idempotency: retrying a state-changing request (a parameter-server Push)
// is only safe when the application makes it so (e.g. by deduplicating on a
// request id). Each request therefore carries Idempotent; a non-idempotent
// request is never retried automatically and fails with ErrNotRetried after
// its timeout. Config.AtMostOnce disables automatic retries for every
// request.
//
// Transport binding (client.go, socket.go): Client carries requests and
// responses (a 24-byte header echoed by the server) over a Dialer — the
// RDMA one is SocketDialer, ByteExpress sockets of an Endpoint — with a
// second Dialer as the TCP fallback, and acts on the Selector's decisions.
// Keepalive (§7.1) is the core's job and enters here as OnEngineError.
// Tc is not enforced by the client itself: the owner gives the core's
// engines Tc as their connect timeout (workloads/failover/failoversim does), and a
// connect that misses it comes back as an engine error.
//
// Failures are charged to where the attempt went (a Target: node, path,
// transport), not to where the shard points now: attempts in flight to A
// that time out after the shard moved to B count against A, and only a
// failure of the current choice takes a step down the ladder, so the
// attempts stuck on one dead path move it one step, not one per attempt.
package rpc
