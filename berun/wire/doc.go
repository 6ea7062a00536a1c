// Package wire is berun's control protocol: the messages a controller
// (`berun run`) and the agents on each host (`berun agent`) exchange to push
// a run, assign roles, start them together, watch liveness and collect
// results. It carries no experiment traffic; data moves over the transport
// under test (package tcpx for the kernel-TCP baseline of paper §8, verbs
// for RDMA).
//
// # Frames
//
// Every message is one frame:
//
//	offset 0  'B' 'R'         magic
//	offset 2  version (1)     protocol version, refused unless equal
//	offset 3  type            one of the Type constants
//	offset 4  length          payload bytes, uint32 big-endian
//	offset 8  payload         strict JSON of the type's struct
//
// The length is checked against the type's own bound (Type.MaxPayload, at
// most MaxPayload = 8 MiB) before a byte of payload is read or allocated, and
// a Decoder may further restrict which types it accepts (an agent takes only
// Hello, then Auth, from a peer that has not authenticated, so such a peer
// can make it buffer at most 4 KiB). Payloads are decoded strictly: unknown
// fields, trailing data and values outside their documented bounds (string
// lengths, list sizes, nonce sizes, durations) are refused. Every refusal is
// an error wrapping one of ErrBadMagic, ErrVersion, ErrUnknownType,
// ErrNotAllowed, ErrOversize or ErrMalformed with a human-readable reason,
// which agents log and send back in an ErrorMsg before closing.
//
// # Authentication
//
// Controller and agent share a token (a file named by --token-file or the
// BERUN_TOKEN environment variable, see LoadToken); it never crosses the
// network. The handshake is a mutual challenge-response with HMAC-SHA256:
//
//	controller -> agent  Hello{nonce c}
//	agent -> controller  Challenge{nonce s, proof = HMAC(token, "berun-agent-proof-v1" | c | s)}
//	controller -> agent  Auth{mac = HMAC(token, "berun-controller-auth-v1" | s | c)}
//	agent -> controller  Welcome{agent info}   (or ErrorMsg and close)
//
// Both sides compare with hmac.Equal (constant time); the distinct labels
// stop a reflected answer from passing as the other side's. The token
// authenticates the session but does not encrypt it, and frames after the
// handshake carry no MAC: run the control channel on a management network
// you trust, or tunnel it (SSH, WireGuard).
package wire
