// Package fragsize is the paper's Figure 10 workload (§6.1), written once
// for both runners and free of the simulator: one engine between two
// hosts carries MsgSize-byte messages, Window outstanding, each answered
// with a 32-byte response, while the fragment size varies. It holds the
// configuration and its translation from a scenario, the application
// logic as driven state machines (Sender: how many messages to send when a
// flow comes up or a response arrives; Receiver: which messages it
// answers, with what, and what it counts in the measured interval), and
// the reduction of the measured points to the fragsize table and metrics.
// besim drives it over simhost (package fragsizesim, which also holds what
// the model produces); package hol reuses Sender and Receiver for its
// large flows. It imports no simulator model.
package fragsize
